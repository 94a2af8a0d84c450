# attnprep: rope
# expect: passed
"""Correct: the tables in numpy (float64), handed over with torch.from_numpy; apply_rope with index_select on the rows."""
import numpy as np
import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = 1.0 / np.power(theta, np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)  # (D/2,)
    angles = np.outer(np.arange(seq_len, dtype=np.float64), inv_freq)  # (S, D/2)
    angles = np.concatenate([angles, angles], axis=-1)  # (S, D)
    cos = torch.from_numpy(np.cos(angles)).to(device=device, dtype=torch.float32)
    sin = torch.from_numpy(np.sin(angles)).to(device=device, dtype=torch.float32)
    return cos, sin


def rotate_half(x):
    x1, x2 = torch.tensor_split(x, 2, dim=-1)
    return torch.cat((x2.neg(), x1), dim=-1)


def apply_rope(x, cos, sin, positions=None):
    B, H, T, D = x.shape
    if positions is None:
        positions = torch.arange(T, device=x.device)
    flat = positions.reshape(-1)
    c = cos.index_select(0, flat).view(*positions.shape, D)
    s = sin.index_select(0, flat).view(*positions.shape, D)
    if positions.dim() == 2:
        c, s = c.unsqueeze(1), s.unsqueeze(1)
    y = x.float() * c + rotate_half(x.float()) * s
    return y.to(x.dtype)
