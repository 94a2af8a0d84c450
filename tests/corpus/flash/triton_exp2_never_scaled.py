# attnprep: flash
# expect: wrong_output
# diagnosis: missing_scale
"""Triton tutorial port (offs_m / offs_n, m_i / l_i, exp2 with log2(e)); qk_scale is defined as log2(e)
alone: sm_scale = 1/sqrt(D) is never folded in, so the scores are unscaled."""

import math

import torch


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool = False, block_size: int = 64) -> torch.Tensor:
    B, H, L, D = q.shape
    S = k.shape[2]
    qk_scale = 1.44269504
    out = torch.empty_like(q)
    for start_m in range(0, L, block_size):
        offs_m = torch.arange(start_m, min(start_m + block_size, L), device=q.device)
        q_blk = q[:, :, start_m:start_m + block_size]
        m_i = torch.full((B, H, offs_m.numel()), -float("inf"), dtype=q.dtype, device=q.device)
        l_i = torch.zeros((B, H, offs_m.numel()), dtype=q.dtype, device=q.device)
        acc = torch.zeros((B, H, offs_m.numel(), D), dtype=q.dtype, device=q.device)
        hi = min(start_m + block_size, S) if is_causal else S
        for start_n in range(0, hi, block_size):
            offs_n = torch.arange(start_n, min(start_n + block_size, S), device=q.device)
            qk = q_blk @ k[:, :, start_n:start_n + block_size].transpose(-1, -2)
            if is_causal:
                qk = qk.masked_fill(offs_m[:, None] < offs_n[None, :], -float("inf"))
            m_ij = torch.maximum(m_i, qk.amax(-1) * qk_scale)
            p = torch.exp2(qk * qk_scale - m_ij[..., None])
            alpha = torch.exp2(m_i - m_ij)
            l_i = l_i * alpha + p.sum(-1)
            acc = acc * alpha[..., None] + p @ v[:, :, start_n:start_n + block_size]
            m_i = m_ij
        out[:, :, start_m:start_m + block_size] = acc / l_i[..., None]
    return out
# bug-line: 15
