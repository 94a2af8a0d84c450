# attnprep: flash
# expect: passed
"""A PaddlePaddle port of the FlashAttention forward: paddle.transpose(x, perm=[...]) habits kept
(the heads are moved to the front, [H, B, L, D], then back), paddle.full / paddle.maximum names
through tiny wrappers, the causal test done per tile with the absolute row and column ids; the
key loop stops at the block that holds the diagonal: correct."""

import math

import torch


def transpose(x, perm):
    return x.permute(*perm)


def full(shape, fill_value, dtype, like):
    return torch.full(shape, fill_value, dtype=dtype, device=like.device)


def flash_attention(q, k, v, is_causal=False, block_size=64):
    qh = transpose(q, perm=[1, 0, 2, 3])  # [H, B, L, D]
    kh = transpose(k, perm=[1, 0, 2, 3])
    vh = transpose(v, perm=[1, 0, 2, 3])
    H, B, L, D = qh.shape
    S = kh.shape[2]
    sm_scale = 1.0 / math.sqrt(D)
    out_tiles = []
    for start_m in range(0, L, block_size):
        q_tile = qh[:, :, start_m:start_m + block_size]
        bm = q_tile.shape[2]
        m_i = full([H, B, bm], -float("inf"), q.dtype, q)
        l_i = full([H, B, bm], 0.0, q.dtype, q)
        acc = full([H, B, bm, D], 0.0, q.dtype, q)
        hi = min(S, start_m + bm) if is_causal else S
        for start_n in range(0, hi, block_size):
            k_tile = kh[:, :, start_n:start_n + block_size]
            v_tile = vh[:, :, start_n:start_n + block_size]
            qk = torch.matmul(q_tile, transpose(k_tile, perm=[0, 1, 3, 2])) * sm_scale
            if is_causal:
                offs_m = torch.arange(start_m, start_m + bm, device=q.device)
                offs_n = torch.arange(start_n, start_n + k_tile.shape[2], device=q.device)
                qk = torch.where(offs_m[:, None] >= offs_n[None, :], qk, torch.full_like(qk, -float("inf")))
            m_ij = torch.maximum(m_i, qk.amax(dim=-1))
            p = torch.exp(qk - m_ij[..., None])
            alpha = torch.exp(m_i - m_ij)
            l_i = l_i * alpha + p.sum(dim=-1)
            acc = acc * alpha[..., None] + torch.matmul(p, v_tile)
            m_i = m_ij
        out_tiles.append(acc / l_i[..., None])
    out = torch.cat(out_tiles, dim=2)  # [H, B, L, D]
    return transpose(out, perm=[1, 0, 2, 3])
