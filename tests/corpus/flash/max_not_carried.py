# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_not_carried
"""The max is the current block's own (m_new = rowmax(s)), never combined with the running one; the
rescale factor uses it all the same."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    res = []
    for i in range(0, L, block_size):
        qb = q[:, :, i:i + block_size]
        n = qb.shape[2]
        m = torch.full((B, H, n, 1), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros((B, H, n, 1), dtype=q.dtype, device=q.device)
        acc = torch.zeros((B, H, n, D), dtype=q.dtype, device=q.device)
        for j in range(0, S, block_size):
            s = qb @ k[:, :, j:j + block_size].transpose(-2, -1) / math.sqrt(D)
            if is_causal:
                rows = torch.arange(i, i + n, device=q.device)[:, None]
                cols = torch.arange(j, j + s.shape[-1], device=q.device)[None, :]
                s = s.masked_fill(cols > rows, float("-inf"))
            m_blk = s.amax(-1, keepdim=True)
            p = torch.exp(s - m_blk)
            corr = torch.exp(m - m_blk)
            l = corr * l + p.sum(-1, keepdim=True)
            acc = corr * acc + p @ v[:, :, j:j + block_size]
            m = m_blk
        res.append(acc / l)
    return torch.cat(res, dim=2)
