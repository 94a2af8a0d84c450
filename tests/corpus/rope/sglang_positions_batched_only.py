# attnprep: rope
# expect: wrong_output
# diagnosis: rope_positions_ignored
"""SGLang's RotaryEmbedding.forward_native habits (cos_sin_cache indexed by positions, query viewed
(num_tokens, heads, head_size)) mixed with Qwen2's position_ids: a (B, T) positions tensor is
gathered per sample, but a 1-D positions tensor (a decode step's T_past + t) falls through to the
default arange(T): (T,) positions are ignored, (B, T) ones honoured."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float, device=device) / head_dim))
    t = torch.arange(seq_len, dtype=torch.float, device=device)
    freqs = torch.einsum("i,j -> ij", t, inv_freq)
    cos_sin_cache = torch.cat((freqs.cos(), freqs.sin()), dim=-1)  # (seq_len, head_dim) as SGLang keeps it
    cos, sin = cos_sin_cache.chunk(2, dim=-1)
    return torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)


def apply_rope(x, cos, sin, positions=None):
    B, H, T, D = x.shape
    if positions is not None and positions.dim() == 2:
        cos_p, sin_p = cos[positions][:, None], sin[positions][:, None]  # (B, 1, T, D)
    else:
        cos_p, sin_p = cos[:T], sin[:T]
    x1, x2 = x[..., : D // 2], x[..., D // 2:]
    rotated = torch.cat((-x2, x1), dim=-1)
    return (x * cos_p + rotated * sin_p).to(x.dtype)
# bug-line: 26
