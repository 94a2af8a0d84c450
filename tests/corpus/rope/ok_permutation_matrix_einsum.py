# attnprep: rope
# expect: passed
"""rotate_half as a (D, D) signed permutation matrix applied by einsum (a linear-algebra habit)."""
import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    i = torch.arange(head_dim // 2, device=device, dtype=torch.float32)
    inv = torch.exp(-2 * i / head_dim * torch.log(torch.tensor(theta, dtype=torch.float32)))
    f = torch.arange(seq_len, device=device, dtype=torch.float32)[:, None] * inv
    return torch.cat([f, f], 1).cos(), torch.cat([f, f], 1).sin()


def _rot_matrix(D, dtype, device):
    R = torch.zeros(D, D, dtype=dtype, device=device)
    h = D // 2
    idx = torch.arange(h, device=device)
    R[idx + h, idx] = -1.0  # out[i] = -x[i + h]
    R[idx, idx + h] = 1.0  # out[i + h] = x[i]
    return R


def apply_rope(x, cos, sin, positions=None):
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    c, s = cos[positions], sin[positions]
    if positions.dim() == 2:
        c, s = c.unsqueeze(1), s.unsqueeze(1)
    R = _rot_matrix(x.shape[-1], torch.float32, x.device)
    xf = x.float()
    return (xf * c + torch.einsum("...i,io->...o", xf, R) * s).to(x.dtype)
