# attnprep: flash
# expect: wrong_output
"""FlashAttention-1 loop order (key blocks outside, query blocks inside, running statistics kept
for every row in full tensors); the running max starts at 0 instead of -inf, so a row whose scores
are all negative is rescaled by exp(0 - m) it never had."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, N, d = q.shape
    S = k.shape[-2]
    softmax_scale = 1.0 / math.sqrt(d)
    O = torch.zeros_like(q)
    l = torch.zeros(B, H, N, 1, dtype=q.dtype, device=q.device)
    m = torch.zeros(B, H, N, 1, dtype=q.dtype, device=q.device)
    for j in range(0, S, block_size):
        Kj = k[:, :, j:j + block_size]
        Vj = v[:, :, j:j + block_size]
        for i in range(0, N, block_size):
            Qi = q[:, :, i:i + block_size]
            Sij = (Qi @ Kj.transpose(-1, -2)) * softmax_scale
            if is_causal:
                qi = torch.arange(i, i + Qi.shape[2], device=q.device)[:, None]
                kj = torch.arange(j, j + Kj.shape[2], device=q.device)[None, :]
                Sij = Sij.masked_fill(kj > qi, float("-inf"))
            mi, li, Oi = m[:, :, i:i + block_size], l[:, :, i:i + block_size], O[:, :, i:i + block_size]
            mij = Sij.amax(dim=-1, keepdim=True)
            m_new = torch.maximum(mi, mij)
            Pij = torch.exp(Sij - m_new)
            l_new = torch.exp(mi - m_new) * li + Pij.sum(dim=-1, keepdim=True)
            O[:, :, i:i + block_size] = (li * torch.exp(mi - m_new) * Oi + Pij @ Vj) / l_new
            m[:, :, i:i + block_size] = m_new
            l[:, :, i:i + block_size] = l_new
    return O
# bug-line: 18
