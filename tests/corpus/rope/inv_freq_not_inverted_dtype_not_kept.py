# attnprep: rope
# expect: wrong_output
# diagnosis: rope_inv_freq_not_inverted + output_dtype_not_kept
"""rope_cache uses theta ** (2i/D) as the frequency (not its inverse), and apply_rope returns the
float32 product for a bfloat16 x (the dtype mistake shows only in the bfloat16 case)."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    freq = theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim)
    ang = torch.outer(torch.arange(seq_len, device=device).float(), freq)
    ang = torch.cat([ang, ang], -1)
    return ang.cos(), ang.sin()


def apply_rope(x, cos, sin, positions=None):
    if positions is None:
        positions = torch.arange(x.shape[2], device=x.device)
    c, s = cos[positions], sin[positions]
    if positions.ndim == 2:
        c, s = c[:, None], s[:, None]
    x1, x2 = x.chunk(2, -1)
    return x * c + torch.cat([-x2, x1], -1) * s
