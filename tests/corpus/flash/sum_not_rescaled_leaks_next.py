# attnprep: flash
# expect: mask_leak
# diagnosis: flash_sum_not_rescaled + flash_causal_off_by_one
"""Tiles of queries and keys; the accumulator is rescaled but the running sum is not (l += rowsum(p)),
and the causal test inside a tile is cols > rows + 1 (one future key visible)."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    scale = 1.0 / math.sqrt(D)
    out = torch.empty_like(q)
    for qs in range(0, L, block_size):
        qb = q[:, :, qs:qs + block_size]
        n = qb.shape[2]
        m_i = torch.full((B, H, n), -float("inf"), dtype=q.dtype, device=q.device)
        l_i = torch.zeros((B, H, n), dtype=q.dtype, device=q.device)
        acc = torch.zeros((B, H, n, D), dtype=q.dtype, device=q.device)
        for ks in range(0, S, block_size):
            kb, vb = k[:, :, ks:ks + block_size], v[:, :, ks:ks + block_size]
            s = torch.einsum("bhid,bhjd->bhij", qb, kb) * scale
            if is_causal:
                rows = torch.arange(qs, qs + n, device=q.device)[:, None]
                cols = torch.arange(ks, ks + kb.shape[2], device=q.device)[None, :]
                s = torch.where(cols > rows + 1, float("-inf"), s)
            m_new = torch.maximum(m_i, s.amax(-1))
            p = torch.exp(s - m_new[..., None])
            alpha = torch.exp(m_i - m_new)
            l_i = l_i + p.sum(-1)
            acc = acc * alpha[..., None] + torch.einsum("bhij,bhjd->bhid", p, vb)
            m_i = m_new
        out[:, :, qs:qs + n] = acc / l_i[..., None]
    return out
