# attnprep: flash
# expect: passed
"""FlashAttention-2's loop order, interview-note style: query blocks outside, key blocks inside,
causal blocks after the diagonal skipped, one division at the end, output written into a buffer."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    softmax_scale = 1.0 / math.sqrt(D)
    o = torch.empty_like(q)
    for start_m in range(0, L, block_size):
        end_m = min(start_m + block_size, L)
        qi = q[:, :, start_m:end_m]
        m_i = torch.full((B, H, end_m - start_m), -float("inf"), device=q.device, dtype=q.dtype)
        l_i = torch.zeros((B, H, end_m - start_m), device=q.device, dtype=q.dtype)
        acc = torch.zeros((B, H, end_m - start_m, D), device=q.device, dtype=q.dtype)
        hi = min(end_m, S) if is_causal else S
        for start_n in range(0, hi, block_size):
            end_n = min(start_n + block_size, S)
            kj, vj = k[:, :, start_n:end_n], v[:, :, start_n:end_n]
            qk = torch.matmul(qi, kj.transpose(-1, -2)) * softmax_scale
            if is_causal:
                offs_m = torch.arange(start_m, end_m, device=q.device)
                offs_n = torch.arange(start_n, end_n, device=q.device)
                qk = torch.where(offs_m[:, None] >= offs_n[None, :], qk, float("-inf"))
            m_ij = torch.maximum(m_i, qk.max(dim=-1).values)
            p = torch.exp(qk - m_ij[..., None])
            alpha = torch.exp(m_i - m_ij)
            l_i = l_i * alpha + p.sum(dim=-1)
            acc = acc * alpha[..., None] + torch.matmul(p, vj)
            m_i = m_ij
        o[:, :, start_m:end_m] = acc / l_i[..., None]
    return o
