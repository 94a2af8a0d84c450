# attnprep: flash
# expect: mask_leak
# diagnosis: flash_causal_off_by_one
"""The Triton tutorial's _attn_fwd_inner in torch: offs_m / offs_n, start_n stepping by BLOCK_N, an
exp2 softmax with qk_scale *= log2(e), l_i and acc rescaled by alpha; the causal comparison is
offs_m > start_n + offs_n, which also hides the diagonal."""
import math
import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, N_CTX, HEAD_DIM = q.shape
    N_KV = k.shape[2]
    BLOCK_M = BLOCK_N = block_size
    qk_scale = (1.0 / math.sqrt(HEAD_DIM)) * 1.44269504  # 1/log(2)
    out = torch.empty_like(q)
    for start_m in range(0, N_CTX, BLOCK_M):
        offs_m = torch.arange(start_m, min(start_m + BLOCK_M, N_CTX), device=q.device)
        q_tile = q[:, :, offs_m]
        m_i = torch.full((B, H, len(offs_m)), float("-inf"), device=q.device, dtype=q.dtype)
        l_i = torch.zeros((B, H, len(offs_m)), device=q.device, dtype=q.dtype)
        acc = torch.zeros((B, H, len(offs_m), HEAD_DIM), device=q.device, dtype=q.dtype)
        hi = min(start_m + BLOCK_M, N_KV) if is_causal else N_KV
        for start_n in range(0, hi, BLOCK_N):
            offs_n = torch.arange(start_n, min(start_n + BLOCK_N, N_KV), device=q.device)
            qk = q_tile @ k[:, :, offs_n].transpose(-1, -2)
            if is_causal:
                mask = offs_m[:, None] > offs_n[None, :]
                qk = qk * qk_scale + torch.where(mask, 0.0, -1.0e6)
            else:
                qk = qk * qk_scale
            m_ij = torch.maximum(m_i, qk.amax(-1))
            p = torch.exp2(qk - m_ij[..., None])
            alpha = torch.exp2(m_i - m_ij)
            l_i = l_i * alpha + p.sum(-1)
            acc = acc * alpha[..., None] + p @ v[:, :, offs_n]
            m_i = m_ij
        out[:, :, offs_m] = acc / l_i[..., None]
    return out
# bug-line: 28
