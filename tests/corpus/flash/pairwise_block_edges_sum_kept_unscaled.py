# attnprep: flash
# expect: wrong_output
# diagnosis: flash_sum_not_rescaled + missing_scale
"""itertools.pairwise habits: the block edges are one list [0, b, 2b, ..., S] and the loops walk
pairwise(edges); the running sum was added to without its exp(m_old - m_new) factor, and the
queries were never scaled by 1/sqrt(D)."""
from itertools import pairwise

import torch


def edges(n, step):
    return list(range(0, n, step)) + [n]


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[-2]
    outs = []
    for a, b in pairwise(edges(L, block_size)):
        qb = q[:, :, a:b]
        m = torch.full((B, H, b - a, 1), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros(B, H, b - a, 1, dtype=q.dtype, device=q.device)
        acc = torch.zeros(B, H, b - a, D, dtype=q.dtype, device=q.device)
        for c, d in pairwise(edges(S, block_size)):
            if is_causal and c >= b:
                break
            s = qb @ k[:, :, c:d].transpose(-2, -1)
            if is_causal:
                later = torch.arange(c, d, device=q.device)[None, :] > torch.arange(a, b, device=q.device)[:, None]
                s = s.masked_fill(later, float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            p = torch.exp(s - m_new)
            alpha = torch.exp(m - m_new)
            l = l + p.sum(dim=-1, keepdim=True)
            acc = alpha * acc + p @ v[:, :, c:d]
            m = m_new
        outs.append(acc / l)
    return torch.cat(outs, dim=2)
# bug-line: 21, 35
