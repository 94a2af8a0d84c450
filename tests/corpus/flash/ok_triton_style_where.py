# attnprep: flash
# expect: passed
"""Triton tutorial style in PyTorch: exp2 with log2(e) folded into the scale, torch.where for the causal
tile, the causal loop stopping at the tile that holds the diagonal, einsum."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[-2]
    qk_scale = (1.0 / math.sqrt(D)) * 1.4426950408889634  # log2(e)
    tiles = []
    for start_m in range(0, L, block_size):
        q_tile = q[..., start_m:start_m + block_size, :]
        BM = q_tile.shape[-2]
        m_i = q.new_full((B, H, BM, 1), float("-inf"))
        l_i = q.new_zeros((B, H, BM, 1))
        acc = q.new_zeros((B, H, BM, D))
        hi = min(S, start_m + BM) if is_causal else S
        offs_m = torch.arange(start_m, start_m + BM, device=q.device)
        for start_n in range(0, hi, block_size):
            k_tile = k[..., start_n:start_n + block_size, :]
            v_tile = v[..., start_n:start_n + block_size, :]
            qk = torch.einsum("bhmd,bhnd->bhmn", q_tile, k_tile) * qk_scale
            if is_causal:
                offs_n = torch.arange(start_n, start_n + k_tile.shape[-2], device=q.device)
                qk = torch.where(offs_m[:, None] >= offs_n[None, :], qk, float("-inf"))
            m_ij = torch.maximum(m_i, qk.amax(-1, keepdim=True))
            p = torch.exp2(qk - m_ij)
            alpha = torch.exp2(m_i - m_ij)
            l_i = l_i * alpha + p.sum(-1, keepdim=True)
            acc = acc * alpha + torch.einsum("bhmn,bhnd->bhmd", p, v_tile)
            m_i = m_ij
        tiles.append(acc / l_i)
    return torch.cat(tiles, dim=-2)
