# attnprep: rope
# expect: passed
"""Correct: rotate_half as a fixed (D, D) matrix filled by index assignment, applied by matmul; torch.hstack
for [freqs, freqs]."""
import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    exps = torch.arange(0, head_dim, 2, device=device).to(torch.float32) / head_dim
    inv_freq = torch.reciprocal(torch.tensor(theta, device=device) ** exps)
    t = torch.arange(seq_len, device=device).to(torch.float32)
    freqs = t[:, None] * inv_freq[None, :]
    emb = torch.hstack([freqs, freqs])
    return emb.cos(), emb.sin()


def _rotate_half_matrix(D, device, dtype):
    h = D // 2
    R = torch.zeros(D, D, device=device, dtype=dtype)
    idx = torch.arange(h, device=device)
    R[idx + h, idx] = -1.0    # out[:h] = -x[h:]
    R[idx, idx + h] = 1.0     # out[h:] = x[:h]
    return R


def apply_rope(x, cos, sin, positions=None):
    B, H, T, D = x.shape
    pos = positions if positions is not None else torch.arange(T, device=x.device)
    c, s = cos[pos], sin[pos]
    if pos.dim() == 2:
        c, s = c.unsqueeze(1), s.unsqueeze(1)
    R = _rotate_half_matrix(D, x.device, torch.float32)
    xf = x.float()
    return (xf * c + (xf @ R) * s).to(x.dtype)
