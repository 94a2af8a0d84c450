# attnprep: flash
# expect: wrong_output
# diagnosis: flash_sum_not_rescaled + flash_causal_off_by_one
"""The key loop as functools.reduce over a list of key-block starts with an immutable (m, l, acc)
state tuple and a step function; the causal test of a tile in a small predicate; one query block
at a time concatenated at the end."""
import functools
import math

import torch


def _blocked(rows, cols):
    return cols >= rows


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[-2]
    scale = D ** -0.5
    outs = []
    for i0 in range(0, L, block_size):
        qi = q[..., i0:i0 + block_size, :]
        bq = qi.shape[-2]
        rows = torch.arange(i0, i0 + bq, device=q.device)[:, None]

        def step(state, j0):
            m, l, acc = state
            kj = k[..., j0:j0 + block_size, :]
            vj = v[..., j0:j0 + block_size, :]
            s = (qi @ kj.transpose(-1, -2)) * scale
            if is_causal:
                cols = torch.arange(j0, j0 + kj.shape[-2], device=q.device)[None, :]
                s = s.masked_fill(_blocked(rows, cols), float("-inf"))
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            p = torch.exp(s - m_new)
            p = torch.nan_to_num(p, nan=0.0)
            corr = torch.exp(m - m_new).nan_to_num(nan=0.0)
            l = l + p.sum(-1, keepdim=True)
            acc = corr * acc + p @ vj
            return m_new, l, acc

        starts = [j0 for j0 in range(0, S, block_size) if not (is_causal and j0 > i0 + bq - 1)]
        init = (q.new_full((B, H, bq, 1), float("-inf")), q.new_zeros(B, H, bq, 1), q.new_zeros(B, H, bq, D))
        _, l, acc = functools.reduce(step, starts, init)
        outs.append(acc / l)
    return torch.cat(outs, dim=-2)
# bug-line: 14, 39
