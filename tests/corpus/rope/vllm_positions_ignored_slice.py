# attnprep: rope
# expect: wrong_output
# diagnosis: rope_positions_ignored
"""vLLM-style rotary helper that slices the table to the first T rows instead of gathering the rows
of `positions`: a decode step or a left-padded batch is rotated as if it started at 0."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    rotary_dim = head_dim
    inv_freq = 1.0 / (theta ** (torch.arange(0, rotary_dim, 2, dtype=torch.float, device=device) / rotary_dim))
    t = torch.arange(seq_len, dtype=torch.float, device=device)
    freqs = torch.einsum("i,j -> ij", t, inv_freq)
    cache = torch.cat((freqs, freqs), dim=-1)
    return cache.cos(), cache.sin()


def _rotate_neox(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    num_tokens = x.shape[-2]
    cos = cos[:num_tokens]
    sin = sin[:num_tokens]
    out = x.float() * cos + _rotate_neox(x.float()) * sin
    return out.to(x.dtype)
# bug-line: 26
