# attnprep: flash
# expect: wrong_output
# diagnosis: flash_causal_off_by_one
"""Triton tutorial's names (start_m, offs_m, offs_n, BLOCK_M, BLOCK_N, qk_scale). Causal: the key
loop stops at start_m * BLOCK_M instead of (start_m + 1) * BLOCK_M, so the diagonal tile is never
visited."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    Z, H, N_CTX, HEAD_DIM = q.shape
    N_KV = k.shape[2]
    BLOCK_M = BLOCK_N = block_size
    qk_scale = 1.0 / math.sqrt(HEAD_DIM)
    out = torch.empty_like(q)
    for start_m in range(0, math.ceil(N_CTX / BLOCK_M)):
        offs_m = start_m * BLOCK_M + torch.arange(0, BLOCK_M, device=q.device)
        offs_m = offs_m[offs_m < N_CTX]
        q_tile = q[:, :, offs_m]
        m_i = torch.full((Z, H, len(offs_m)), float("-inf"), device=q.device)
        l_i = torch.zeros(Z, H, len(offs_m), device=q.device)
        acc = torch.zeros(Z, H, len(offs_m), HEAD_DIM, device=q.device)
        hi = min(start_m * BLOCK_M, N_KV) if is_causal else N_KV
        for start_n in range(0, hi, BLOCK_N):
            offs_n = start_n + torch.arange(0, BLOCK_N, device=q.device)
            offs_n = offs_n[offs_n < N_KV]
            qk = q_tile @ k[:, :, offs_n].transpose(-1, -2) * qk_scale
            if is_causal:
                qk = torch.where(offs_m[:, None] >= offs_n[None, :], qk, float("-inf"))
            m_ij = torch.maximum(m_i, qk.amax(-1))
            p = torch.exp(qk - m_ij[..., None])
            alpha = torch.exp(m_i - m_ij)
            l_i = l_i * alpha + p.sum(-1)
            acc = acc * alpha[..., None] + p @ v[:, :, offs_n]
            m_i = m_ij
        out[:, :, offs_m] = acc / l_i[..., None]
    return out
