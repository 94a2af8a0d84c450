# attnprep: flash
# expect: mask_leak
# diagnosis: missing_scale + flash_causal_off_by_one
"""Tiny C-port helpers (llama2.c / llm.c flavour): one small function per step, explicit block
bounds (q_start, q_end, k_start, k_end), m / l / o names, the scale hoisted out of the loop."""
import math

import torch


def matmul_t(a, b):
    return a @ b.transpose(-1, -2)


def row_max(s):
    return s.amax(dim=-1, keepdim=True)


def causal_tile_mask(q_start, q_end, k_start, k_end, device):
    qi = torch.arange(q_start, q_end, device=device)[:, None]
    kj = torch.arange(k_start, k_end, device=device)[None, :]
    return kj <= qi + 1


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    scale = 1.0 / math.sqrt(D)
    o_all = torch.empty_like(q)
    for q_start in range(0, L, block_size):
        q_end = min(q_start + block_size, L)
        qb = q[:, :, q_start:q_end]
        m = torch.full((B, H, q_end - q_start, 1), float("-inf"), device=q.device, dtype=q.dtype)
        l = torch.zeros_like(m)
        o = torch.zeros_like(qb)
        for k_start in range(0, S, block_size):
            k_end = min(k_start + block_size, S)
            s = matmul_t(qb, k[:, :, k_start:k_end])
            if is_causal:
                s = s.masked_fill(~causal_tile_mask(q_start, q_end, k_start, k_end, q.device), float("-inf"))
            m_new = torch.maximum(m, row_max(s))
            alpha = torch.exp(m - m_new).nan_to_num(0.0)
            p = torch.exp(s - m_new).nan_to_num(0.0)
            l = l * alpha + p.sum(-1, keepdim=True)
            o = o * alpha + p @ v[:, :, k_start:k_end]
            m = m_new
        o_all[:, :, q_start:q_end] = o / l
    return o_all
# bug-line: 22, 38
