# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_updated_before_rescale + flash_final_division_missing
"""itertools.starmap over (query start, key start) pairs, with the per-row state in a dict keyed by
query start; the combine written as three statements. Two slips: the running max is overwritten
before the rescale factor is computed (so the factor is always exp(0) = 1), and the query block's
result is the accumulator, never divided by the running sum."""

import itertools
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    scale = 1 / math.sqrt(D)
    state = {}

    def step(i, j):
        qb, kb, vb = q[:, :, i:i + block_size], k[:, :, j:j + block_size], v[:, :, j:j + block_size]
        if i not in state:
            n = qb.shape[2]
            state[i] = [qb.new_full((B, H, n, 1), -math.inf), qb.new_zeros(B, H, n, 1), qb.new_zeros(B, H, n, D)]
        st = state[i]
        if is_causal and j >= i + qb.shape[2]:
            return
        s = (qb @ kb.transpose(-1, -2)) * scale
        if is_causal:
            r = torch.arange(i, i + qb.shape[2], device=q.device)[:, None]
            c = torch.arange(j, j + kb.shape[2], device=q.device)[None, :]
            s = s.masked_fill(c > r, -math.inf)
        st[0] = torch.maximum(st[0], s.amax(-1, keepdim=True))
        alpha = torch.exp(st[0] - st[0])
        p = torch.exp(s - st[0])
        st[1] = alpha * st[1] + p.sum(-1, keepdim=True)
        st[2] = alpha * st[2] + p @ vb

    list(itertools.starmap(step, itertools.product(range(0, L, block_size), range(0, S, block_size))))
    return torch.cat([state[i][2] for i in range(0, L, block_size)], dim=2)
# bug-line: 34, 35, 41
