# attnprep: flash
# expect: passed
"""A Julia programmer's FlashAttention: 1-based block indices (for qb in 1:nq) turned into 0-based
slices at the last moment, UnitRange-like (first, last) pairs with last inclusive, cld for the
number of blocks, the state (m, l, acc) updated with broadcasted "dot" operations."""
import math

import torch


def cld(a, b):  # Julia's ceiling division
    return -(-a // b)


def block_range(b, bs, n):  # 1-based block b -> 1-based inclusive (first, last)
    return (b - 1) * bs + 1, min(b * bs, n)


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    scale = 1.0 / math.sqrt(D)
    out = torch.empty_like(q)
    for qb in range(1, cld(L, block_size) + 1):
        i1, i2 = block_range(qb, block_size, L)
        Qi = q[:, :, i1 - 1:i2] * scale
        m = torch.full((B, H, i2 - i1 + 1, 1), -math.inf, dtype=q.dtype, device=q.device)
        l = torch.zeros_like(m)
        acc = torch.zeros(B, H, i2 - i1 + 1, D, dtype=q.dtype, device=q.device)
        for kb in range(1, cld(S, block_size) + 1):
            j1, j2 = block_range(kb, block_size, S)
            if is_causal and j1 > i2:  # whole key block after the query block's last row
                break
            s = Qi @ k[:, :, j1 - 1:j2].transpose(-1, -2)
            if is_causal:
                rows = torch.arange(i1, i2 + 1, device=q.device)[:, None]
                cols = torch.arange(j1, j2 + 1, device=q.device)[None, :]
                s = s.masked_fill(cols > rows, -math.inf)
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            p = torch.exp(s - m_new)
            alpha = torch.exp(m - m_new)
            l = alpha * l + p.sum(dim=-1, keepdim=True)
            acc = alpha * acc + p @ v[:, :, j1 - 1:j2]
            m = m_new
        out[:, :, i1 - 1:i2] = acc / l
    return out
