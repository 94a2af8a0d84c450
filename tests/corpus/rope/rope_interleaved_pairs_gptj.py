# attnprep: rope
# expect: wrong_output
# diagnosis: rope_interleaved_pairs
"""GPT-J's convention throughout: sin / cos repeated per pair (repeat_interleave) and
rotate_every_two. Right for GPT-J's weights, not for the rotate-half contract."""

import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    sinusoid_inp = torch.einsum("i , j -> i j", torch.arange(seq_len, device=device).float(), inv_freq)
    sin, cos = torch.sin(sinusoid_inp), torch.cos(sinusoid_inp)
    return torch.repeat_interleave(cos, 2, dim=-1), torch.repeat_interleave(sin, 2, dim=-1)


def rotate_every_two(x):
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


def apply_rope(x, cos, sin, positions=None):
    if positions is None:
        positions = torch.arange(x.shape[2], device=x.device)
    cos, sin = cos[positions], sin[positions]
    if positions.dim() == 2:
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return ((x * cos) + (rotate_every_two(x) * sin)).to(x.dtype)
