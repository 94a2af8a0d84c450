# attnprep: flash
# expect: passed
"""Correct: a Triton kernel emulated in Python: one call per (pid_m, off_hz) program over a (B*H, L, D) view, offsets masked at the tails, the output written by index."""
import math

import torch


def _fwd_kernel(Q, K, V, Out, start_m, off_hz, sm_scale, BLOCK_M, BLOCK_N, IS_CAUSAL):
    """One Triton program: query tile start_m of head off_hz, the key tiles streamed through."""
    L, S, D = Q.shape[1], K.shape[1], Q.shape[2]
    offs_m = start_m * BLOCK_M + torch.arange(BLOCK_M, device=Q.device)
    offs_m = offs_m[offs_m < L]
    q = Q[off_hz, offs_m]                                              # (BLOCK_M, D)
    m_i = torch.full((len(offs_m),), -float("inf"), device=Q.device)
    l_i = torch.zeros(len(offs_m), device=Q.device)
    acc = torch.zeros(len(offs_m), D, device=Q.device)
    hi = min(S, (start_m + 1) * BLOCK_M) if IS_CAUSAL else S
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + torch.arange(BLOCK_N, device=Q.device)
        offs_n = offs_n[offs_n < S]
        qk = (q @ K[off_hz, offs_n].T) * sm_scale
        if IS_CAUSAL:
            qk = torch.where(offs_m[:, None] >= offs_n[None, :], qk, float("-inf"))
        m_ij = torch.maximum(m_i, qk.max(1).values)
        p = torch.exp(qk - m_ij[:, None])
        alpha = torch.exp(m_i - m_ij)
        l_i = l_i * alpha + p.sum(1)
        acc = acc * alpha[:, None] + p @ V[off_hz, offs_n]
        m_i = m_ij
    Out[off_hz, offs_m] = (acc / l_i[:, None]).to(Out.dtype)


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    Q, K, V = q.reshape(B * H, L, D), k.reshape(B * H, -1, D), v.reshape(B * H, -1, D)
    Out = torch.empty_like(Q)
    grid = (triton_cdiv := (L + block_size - 1) // block_size, B * H)
    for pid_m in range(grid[0]):
        for off_hz in range(grid[1]):
            _fwd_kernel(Q, K, V, Out, pid_m, off_hz, 1.0 / math.sqrt(D), block_size, block_size, is_causal)
    return Out.view(B, H, L, D)
