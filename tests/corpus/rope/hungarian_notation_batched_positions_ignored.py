# attnprep: rope
# expect: wrong_output
# diagnosis: rope_positions_ignored
"""Hungarian notation, as an old Win32 / MFC programmer names things: a type prefix on every
variable (tnsX for a tensor, nSeq for an int, fTheta for a float, bHas for a flag); positions
honoured when they come as (T,) but ignored when they come as (B, T): the first T rows are taken."""
import torch


def rope_cache(seq_len, head_dim, theta=10000.0, device=None):
    nSeq, nDim, fTheta = seq_len, head_dim, float(theta)
    tnsExp = torch.arange(0, nDim, 2, dtype=torch.float32, device=device) / nDim
    tnsInvFreq = 1.0 / fTheta ** tnsExp
    tnsPos = torch.arange(nSeq, dtype=torch.float32, device=device)
    tnsFreqs = torch.outer(tnsPos, tnsInvFreq)
    tnsEmb = torch.cat([tnsFreqs, tnsFreqs], dim=-1)
    return tnsEmb.cos(), tnsEmb.sin()


def apply_rope(x, cos, sin, positions=None):
    nSeq = x.shape[-2]
    bHasPositions = positions is not None
    if bHasPositions and positions.dim() == 1:
        tnsCos, tnsSin = cos[positions], sin[positions]
    else:
        tnsCos, tnsSin = cos[:nSeq], sin[:nSeq]
    nHalf = x.shape[-1] // 2
    tnsRot = torch.cat([-x[..., nHalf:], x[..., :nHalf]], dim=-1)
    return (x * tnsCos + tnsRot * tnsSin).to(x.dtype)
# bug-line: 26
