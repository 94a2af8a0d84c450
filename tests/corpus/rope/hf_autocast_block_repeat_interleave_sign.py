# attnprep: rope
# expect: wrong_output
# diagnosis: rope_emb_repeat_interleave + rotate_half_sign_flipped
"""Hugging Face's newer LlamaRotaryEmbedding forward: inv_freq_expanded @ position_ids_expanded in
float32 inside `torch.autocast(enabled=False)`, cos / sin made per call from position ids; the module
turned into the contract's two functions (rope_cache takes the positions 0 .. seq_len-1)."""
import torch


def _inv_freq(head_dim, theta, device):
    return 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).to(device=device, dtype=torch.float) / head_dim))


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = _inv_freq(head_dim, theta, device)
    position_ids = torch.arange(seq_len, device=device)[None, :]                       # (1, S)
    inv_freq_expanded = inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
    position_ids_expanded = position_ids[:, None, :].float()
    device_type = torch.device(device).type if device is not None else "cpu"
    with torch.autocast(device_type=device_type, enabled=False):
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)  # (1, S, D/2)
        emb = freqs.repeat_interleave(2, dim=-1)
        cos, sin = emb.cos(), emb.sin()
    return cos[0], sin[0]


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((x2, -x1), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    cos, sin = cos[positions], sin[positions]
    unsqueeze_dim = 1
    if cos.dim() == 3:
        cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return (x * cos + rotate_half(x) * sin).to(x.dtype)
# bug-line: 22, 30
