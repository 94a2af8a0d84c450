# attnprep: rope
# expect: wrong_output
# diagnosis: rope_theta_ignored + rotate_half_sign_flipped
"""Mga komento sa Tagalog (Tagalog comments), a JavaScript programmer's camelCase (headDim, invFreq,
rotateHalf) and UPPER_CASE module constants; the cache built from the module's ROPE_BASE whatever
theta says, and rotateHalf returning [x2, -x1]."""
import torch

ROPE_BASE = 10000.0  # karaniwang base ng Llama


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    halfSteps = torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim
    invFreq = 1.0 / (ROPE_BASE ** halfSteps)  # theta^(-2i/D)
    positions = torch.arange(seq_len, dtype=torch.float32, device=device)
    angles = positions[:, None] * invFreq[None, :]  # (S, D/2): anggulo ng bawat posisyon
    emb = torch.cat([angles, angles], dim=-1)
    return emb.cos(), emb.sin()


def rotateHalf(x):
    halfDim = x.shape[-1] // 2
    firstHalf, secondHalf = x[..., :halfDim], x[..., halfDim:]
    return torch.cat([secondHalf, -firstHalf], dim=-1)  # ikot ng 90 digri


def apply_rope(x, cos, sin, positions=None):
    seqLen = x.shape[-2]
    if positions is None:
        positions = torch.arange(seqLen, device=x.device)
    cosRows, sinRows = cos[positions], sin[positions]
    if positions.dim() == 2:  # (B, T): bawat sample ay may sariling posisyon
        cosRows, sinRows = cosRows.unsqueeze(1), sinRows.unsqueeze(1)
    rotated = x * cosRows + rotateHalf(x) * sinRows
    return rotated.to(x.dtype)
# bug-line: 14, 24
