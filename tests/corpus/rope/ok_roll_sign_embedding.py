# attnprep: rope
# expect: passed
"""Correct: rotate_half as torch.roll by D/2 times a sign vector [-1…, +1…]; the angles via
t[:, None] * inv_freq[None, :] with torch.pow(theta, -exponent); F.embedding gathers the rows."""

import torch
import torch.nn.functional as F


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    exponent = torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim
    inv_freq = torch.pow(torch.tensor(theta, device=device), -exponent)
    t = torch.arange(seq_len, device=device, dtype=torch.float32)
    freqs = t[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x, cos, sin, positions=None):
    B, H, T, D = x.shape
    if positions is None:
        positions = torch.arange(T, device=x.device)
    c = F.embedding(positions, cos)  # (T, D) or (B, T, D)
    s = F.embedding(positions, sin)
    if c.dim() == 3:
        c, s = c[:, None], s[:, None]
    sign = torch.cat([-torch.ones(D // 2, device=x.device), torch.ones(D // 2, device=x.device)])
    rotated = torch.roll(x, shifts=D // 2, dims=-1) * sign.to(x.dtype)
    return (x * c + rotated * s).to(x.dtype)
