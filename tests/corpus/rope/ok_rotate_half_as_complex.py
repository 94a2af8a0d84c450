# attnprep: rope
# expect: passed
"""Correct: rotate-half RoPE done with complex numbers: the halves (x1, x2) read as x1 + i·x2 and
multiplied by e^{iθ} built with torch.polar from the cache's first half; positions by indexing."""
import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    freqs = torch.outer(torch.arange(seq_len, device=device, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x, cos, sin, positions=None):
    T, D = x.shape[-2], x.shape[-1]
    if positions is None:
        positions = torch.arange(T, device=x.device)
    c, s = cos[positions][..., : D // 2], sin[positions][..., : D // 2]  # (T, D/2) or (B, T, D/2)
    if c.dim() == 3:
        c, s = c[:, None], s[:, None]
    rot = torch.complex(c.float(), s.float())
    z = torch.complex(x[..., : D // 2].float(), x[..., D // 2:].float()) * rot
    return torch.cat((z.real, z.imag), dim=-1).to(x.dtype)
