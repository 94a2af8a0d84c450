# attnprep: flash
# expect: passed
"""Correct: key blocks in the OUTER loop, visited last to first (the online softmax does not care
about the order), query blocks inside; per-row state m, l, acc kept in full (B, H, L, ·) buffers
updated slice by slice in place; normalised once at the end."""
import math
import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    scale = D ** -0.5
    m = q.new_full((B, H, L, 1), -math.inf)
    l = q.new_zeros(B, H, L, 1)
    acc = q.new_zeros(B, H, L, D)
    starts = list(range(0, S, block_size))
    for j in reversed(starts):
        kb, vb = k[:, :, j:j + block_size], v[:, :, j:j + block_size]
        cols = torch.arange(j, j + kb.shape[2], device=q.device)
        for i in range(0, L, block_size):
            if is_causal and j > i + block_size - 1:
                continue  # every key of this block is after every query of the query block
            qb = q[:, :, i:i + block_size]
            s = (qb @ kb.transpose(-1, -2)) * scale
            if is_causal:
                rows = torch.arange(i, i + qb.shape[2], device=q.device)
                s = s.masked_fill(cols[None, :] > rows[:, None], -math.inf)
            m_old = m[:, :, i:i + block_size]
            m_new = torch.maximum(m_old, s.amax(-1, keepdim=True))
            # rows with every key of this block masked keep m = -inf; guard the exp
            safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            p = torch.exp(s - safe)
            corr = torch.exp(m_old - safe)
            l[:, :, i:i + block_size] = corr * l[:, :, i:i + block_size] + p.sum(-1, keepdim=True)
            acc[:, :, i:i + block_size] = corr * acc[:, :, i:i + block_size] + p @ vb
            m[:, :, i:i + block_size] = m_new
    return acc / l
