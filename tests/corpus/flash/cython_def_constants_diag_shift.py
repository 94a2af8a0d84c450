# attnprep: flash
# expect: wrong_output
# diagnosis: flash_causal_off_by_one
"""Cython habits by hand: DEF_-prefixed compile-time constants at the top, cdef-like typed comments
on locals, explicit int() casts on sizes; the causal test compared column > row - DEF_DIAG_SHIFT
with the shift chosen as 1, which hides each query's own key."""
import math

import torch

DEF_DIAG_SHIFT = 1
DEF_NEG = float("-inf")


def flash_attention(q, k, v, is_causal=False, block_size=64):
    # cdef int B, H, L, D, S
    B, H, L, D = q.shape
    S = int(k.shape[2])
    scale = 1.0 / math.sqrt(D)  # cdef double scale
    out = torch.empty_like(q)
    for i0 in range(0, L, block_size):  # cdef int i0
        i1 = min(i0 + block_size, L)
        qb = q[:, :, i0:i1] * scale
        m = torch.full((B, H, i1 - i0, 1), DEF_NEG, dtype=q.dtype, device=q.device)
        l = torch.zeros((B, H, i1 - i0, 1), dtype=q.dtype, device=q.device)
        acc = torch.zeros((B, H, i1 - i0, D), dtype=q.dtype, device=q.device)
        for j0 in range(0, S, block_size):  # cdef int j0
            j1 = min(j0 + block_size, S)
            if is_causal and j0 > i1 - 1:
                break
            s = qb @ k[:, :, j0:j1].transpose(-2, -1)
            if is_causal:
                rows = torch.arange(i0, i1, device=q.device)[:, None]
                cols = torch.arange(j0, j1, device=q.device)[None, :]
                s = s.masked_fill(cols > rows - DEF_DIAG_SHIFT, DEF_NEG)
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            p = torch.exp(s - m_new)
            corr = torch.exp(m - m_new)
            l = l * corr + p.sum(-1, keepdim=True)
            acc = acc * corr + p @ v[:, :, j0:j1]
            m = m_new
        out[:, :, i0:i1] = acc / l
    return out
# bug-line: 11
