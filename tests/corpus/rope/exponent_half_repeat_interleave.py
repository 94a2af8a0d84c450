# attnprep: rope
# expect: wrong_output
# diagnosis: rope_exponent_arange_half + rope_emb_repeat_interleave
"""Two mistakes in the cache: the exponent is arange(D/2)/D (frequencies too slow) and the angles are
laid out by repeat_interleave (GPT-J's order) instead of [freqs, freqs]. apply_rope is right."""

import torch


def rope_cache(seq_len: int, head_dim: int, theta: float = 10000.0, device=None):
    half = head_dim // 2
    inv_freq = theta ** (-torch.arange(half, dtype=torch.float32, device=device) / head_dim)
    pos = torch.arange(seq_len, dtype=torch.float32, device=device)
    freqs = pos[:, None] * inv_freq[None, :]
    emb = freqs.repeat_interleave(2, dim=-1)
    return torch.cos(emb), torch.sin(emb)


def apply_rope(x, cos, sin, positions=None):
    if positions is None:
        positions = torch.arange(x.size(-2), device=x.device)
    cos, sin = cos[positions], sin[positions]
    if cos.dim() == 3:
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    d = x.size(-1) // 2
    rotated = torch.cat([-x[..., d:], x[..., :d]], dim=-1)
    return (x * cos + rotated * sin).to(x.dtype)
