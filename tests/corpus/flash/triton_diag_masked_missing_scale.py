# attnprep: flash
# expect: wrong_output
# diagnosis: flash_causal_off_by_one + missing_scale
"""Triton tutorial layout (offs_m / offs_n, lo / hi bounds, exp2 with log2(e)), two slips: the causal
test offs_m >= offs_n is written offs_m > offs_n (the diagonal blocked), and sm_scale is never applied."""

import torch

LOG2E = 1.4426950408889634


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    out = torch.empty_like(q)
    for start_m in range(0, L, block_size):
        offs_m = torch.arange(start_m, min(start_m + block_size, L), device=q.device)
        q_tile = q[:, :, offs_m]
        m_i = torch.full((B, H, offs_m.numel()), float("-inf"), dtype=q.dtype, device=q.device)
        l_i = torch.zeros((B, H, offs_m.numel()), dtype=q.dtype, device=q.device)
        acc = torch.zeros((B, H, offs_m.numel(), D), dtype=q.dtype, device=q.device)
        hi = min(start_m + block_size, S) if is_causal else S
        for start_n in range(0, hi, block_size):
            offs_n = torch.arange(start_n, min(start_n + block_size, S), device=q.device)
            qk = q_tile @ k[:, :, offs_n].transpose(-1, -2)
            if is_causal:
                qk = torch.where(offs_m[:, None] > offs_n[None, :], qk, float("-inf"))
            m_ij = torch.maximum(m_i, qk.amax(-1))
            p = torch.exp2((qk - m_ij[..., None]) * LOG2E)
            alpha = torch.exp2((m_i - m_ij) * LOG2E)
            l_i = l_i * alpha + p.sum(-1)
            acc = acc * alpha[..., None] + p @ v[:, :, offs_n]
            m_i = m_ij
        out[:, :, offs_m] = acc / l_i[..., None]
    return out
# bug-line: 25, 27
