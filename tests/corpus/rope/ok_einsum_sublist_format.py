# attnprep: rope
# expect: passed
"""torch.einsum's sublist format (operands interleaved with lists of axis numbers instead of a
letter string), used for the outer product of positions and frequencies and for the gather."""
import torch

T_AXIS, F_AXIS = 0, 1


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim)
    t = torch.arange(seq_len, dtype=torch.float32, device=device)
    freqs = torch.einsum(t, [T_AXIS], inv_freq, [F_AXIS], [T_AXIS, F_AXIS])  # (S, D/2)
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x.tensor_split(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rope(x, cos, sin, positions=None):
    B, H, T, D = x.shape
    if positions is None:
        positions = torch.arange(T, device=x.device)
    if positions.dim() == 1:
        positions = positions.expand(B, T)
    c = cos[positions][:, None]  # (B, 1, T, D)
    s = sin[positions][:, None]
    out = torch.einsum(x, [0, 1, 2, 3], c, [0, 4, 2, 3], [0, 1, 2, 3]) + rotate_half(x) * s
    return out.to(x.dtype)
