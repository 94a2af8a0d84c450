# attnprep: rope
# expect: wrong_output
# diagnosis: rope_theta_ignored + rotate_half_sign_flipped
"""GPT-NeoX's rotary with base hard-coded to 10000 (theta ignored) and rotate_half returning
cat(x2, -x1)."""
import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    base = 10000
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    t = torch.arange(seq_len, device=device, dtype=inv_freq.dtype)
    freqs = torch.einsum("i,j->ij", t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((x2, -x1), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    cos, sin = cos[positions], sin[positions]
    if positions.dim() == 2:
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return ((x.float() * cos) + (rotate_half(x.float()) * sin)).to(x.dtype)
