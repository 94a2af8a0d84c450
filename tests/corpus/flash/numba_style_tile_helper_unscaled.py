# attnprep: flash
# expect: wrong_output
# diagnosis: missing_scale
"""Numba-kernel habits in torch: small @njit-looking helpers for one tile (qk_tile, online_update),
explicit block indices (ib, jb), row statistics kept as (m_i, l_i), the final divide outside."""
import math

import torch


def qk_tile(q_tile, k_tile):
    return torch.matmul(q_tile, k_tile.transpose(-1, -2))


def online_update(m_i, l_i, acc, s, v_tile):
    m_new = torch.maximum(m_i, s.amax(-1, keepdim=True))
    alpha = torch.exp(m_i - m_new)
    p = torch.exp(s - m_new)
    return m_new, l_i * alpha + p.sum(-1, keepdim=True), acc * alpha + p @ v_tile


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[-2]
    sm_scale = 1.0 / math.sqrt(D)
    out = torch.empty_like(q)
    n_q, n_k = (L + block_size - 1) // block_size, (S + block_size - 1) // block_size
    for ib in range(n_q):
        q_tile = q[:, :, ib * block_size:(ib + 1) * block_size]
        bq = q_tile.shape[-2]
        m_i = torch.full((B, H, bq, 1), float("-inf"), dtype=q.dtype, device=q.device)
        l_i = torch.zeros_like(m_i)
        acc = torch.zeros_like(q_tile)
        for jb in range(n_k):
            if is_causal and jb * block_size > ib * block_size + bq - 1:
                break
            k_tile = k[:, :, jb * block_size:(jb + 1) * block_size]
            v_tile = v[:, :, jb * block_size:(jb + 1) * block_size]
            s = qk_tile(q_tile, k_tile)
            if is_causal:
                rows = torch.arange(ib * block_size, ib * block_size + bq, device=q.device)[:, None]
                cols = torch.arange(jb * block_size, jb * block_size + k_tile.shape[-2], device=q.device)[None, :]
                s = s.masked_fill(cols > rows, float("-inf"))
            m_i, l_i, acc = online_update(m_i, l_i, acc, s, v_tile)
        out[:, :, ib * block_size:(ib + 1) * block_size] = acc / l_i
    return out
# bug-line: 39
