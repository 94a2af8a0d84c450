# attnprep: flash
# expect: mask_leak
# diagnosis: flash_causal_off_by_one + flash_sum_not_rescaled
"""Triton-tutorial names: l_i is added to without the alpha factor, and the causal test
offs_m + 1 >= offs_n lets each query see the next key: two mistakes at once."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    Z, H, N_CTX, HEAD_DIM = q.shape
    N_KV = k.shape[2]
    BLOCK_M = BLOCK_N = block_size
    sm_scale = 1.0 / math.sqrt(HEAD_DIM)
    o = torch.empty_like(q)
    for start_m in range(0, N_CTX, BLOCK_M):
        offs_m = torch.arange(start_m, min(start_m + BLOCK_M, N_CTX), device=q.device)
        q_tile = q[:, :, start_m:start_m + BLOCK_M]
        m_i = torch.full((Z, H, len(offs_m)), float("-inf"), device=q.device)
        l_i = torch.zeros(Z, H, len(offs_m), device=q.device)
        acc = torch.zeros(Z, H, len(offs_m), HEAD_DIM, device=q.device)
        hi = min(start_m + BLOCK_M, N_KV) if is_causal else N_KV
        for start_n in range(0, hi, BLOCK_N):
            offs_n = torch.arange(start_n, min(start_n + BLOCK_N, N_KV), device=q.device)
            qk = q_tile @ k[:, :, start_n:start_n + BLOCK_N].transpose(-1, -2) * sm_scale
            if is_causal:
                qk = torch.where(offs_m[:, None] + 1 >= offs_n[None, :], qk, float("-inf"))
            m_ij = torch.maximum(m_i, qk.amax(-1))
            p = torch.exp(qk - m_ij[..., None])
            alpha = torch.exp(m_i - m_ij)
            l_i = l_i + p.sum(-1)
            acc = acc * alpha[..., None] + p @ v[:, :, start_n:start_n + BLOCK_N]
            m_i = m_ij
        o[:, :, start_m:start_m + BLOCK_M] = acc / l_i[..., None]
    return o
