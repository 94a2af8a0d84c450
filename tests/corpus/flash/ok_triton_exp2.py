# attnprep: flash
# expect: passed
"""The Triton tutorial's _attn_fwd_inner transcribed to PyTorch: qk_scale folded with log2(e),
exp2 instead of exp, m_i / l_i / acc per query tile, the causal tile split into 'off-band' and 'on-band'
stages, acc / l_i at the end."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    BLOCK_M = BLOCK_N = block_size
    Z, H, N_CTX_Q, HEAD_DIM = q.shape
    N_CTX_K = k.shape[2]
    qk_scale = (1.0 / math.sqrt(HEAD_DIM)) * 1.44269504  # 1/log(2)
    out = torch.empty_like(q)
    for start_m in range(0, N_CTX_Q, BLOCK_M):
        offs_m = torch.arange(start_m, min(start_m + BLOCK_M, N_CTX_Q), device=q.device)
        q_tile = q[:, :, start_m:start_m + BLOCK_M].float()
        m_i = torch.full((Z, H, offs_m.numel()), float("-inf"), device=q.device)
        l_i = torch.ones((Z, H, offs_m.numel()), device=q.device)
        acc = torch.zeros((Z, H, offs_m.numel(), HEAD_DIM), device=q.device)
        first = True
        hi = min(N_CTX_K, start_m + BLOCK_M) if is_causal else N_CTX_K
        for start_n in range(0, hi, BLOCK_N):
            offs_n = torch.arange(start_n, min(start_n + BLOCK_N, N_CTX_K), device=q.device)
            k_tile = k[:, :, start_n:start_n + BLOCK_N].float()
            v_tile = v[:, :, start_n:start_n + BLOCK_N].float()
            qk = q_tile @ k_tile.transpose(-1, -2)
            if is_causal and start_n + BLOCK_N > start_m:  # the on-band stage
                qk = qk * qk_scale + torch.where(offs_m[:, None] >= offs_n[None, :], 0.0, -1.0e6)
                m_ij = torch.maximum(m_i, qk.amax(-1))
                qk = qk - m_ij[..., None]
            else:
                m_ij = torch.maximum(m_i, qk.amax(-1) * qk_scale)
                qk = qk * qk_scale - m_ij[..., None]
            p = torch.exp2(qk)
            alpha = torch.exp2(m_i - m_ij)
            if first:
                l_i = torch.zeros_like(l_i)
                first = False
            l_i = l_i * alpha + p.sum(-1)
            acc = acc * alpha[..., None] + p @ v_tile
            m_i = m_ij
        out[:, :, start_m:start_m + BLOCK_M] = (acc / l_i[..., None]).to(q.dtype)
    return out
