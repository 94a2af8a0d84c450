# attnprep: rope
# expect: error
# diagnosis: tensor_without_device
"""The default positions come from torch.arange(T) without device=: on the CPU whatever x's device,
and index_select on a GPU cache with a CPU index raises. The cache also ignores its device argument."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2).float() / head_dim)
    freqs = torch.outer(torch.arange(seq_len).float(), inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rope(x, cos, sin, positions=None):
    if positions is None:
        positions = torch.arange(x.shape[-2])
    if positions.dim() == 2:
        cos, sin = cos[positions][:, None], sin[positions][:, None]
    else:
        cos, sin = cos.index_select(0, positions), sin.index_select(0, positions)
    return (x * cos + rotate_half(x) * sin).to(x.dtype)
