# attnprep: flash
# expect: mask_leak
# diagnosis: flash_acc_not_rescaled + flash_causal_off_by_one
"""An OCaml programmer's habits: the key loop as List.fold_left (functools.reduce) of a `step`
function over the key-tile starts with an immutable (m, l, acc) state, the query loop as a List.map
over block starts; the accumulator added to without the rescale, and each row's next key let
through on the diagonal tile."""
import math
from functools import reduce

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    b, h, n_q, d = q.shape
    n_k = k.shape[-2]
    scale = 1.0 / math.sqrt(d)

    def query_block(i):
        qb = q[..., i : i + block_size, :] * scale
        bq = qb.shape[-2]
        last = min(n_k, i + bq) if is_causal else n_k

        def step(state, j):  # let step (m, l, acc) j = ...
            m, l, acc = state
            kb, vb = k[..., j : j + block_size, :], v[..., j : j + block_size, :]
            s = qb @ kb.transpose(-1, -2)
            if is_causal:
                r = torch.arange(i, i + bq, device=q.device)[:, None]
                c = torch.arange(j, j + kb.shape[-2], device=q.device)[None, :]
                s = s.masked_fill(c > r + 1, -math.inf)
            m2 = torch.maximum(m, s.amax(-1, keepdim=True))
            p = torch.exp(s - m2)
            a = torch.exp(m - m2)
            return (m2, a * l + p.sum(-1, keepdim=True), acc + p @ vb)

        init = (
            torch.full((b, h, bq, 1), -math.inf, dtype=q.dtype, device=q.device),
            torch.zeros(b, h, bq, 1, dtype=q.dtype, device=q.device),
            torch.zeros(b, h, bq, d, dtype=q.dtype, device=q.device),
        )
        _, l, acc = reduce(step, range(0, last, block_size), init)  # List.fold_left step init starts
        return acc / l

    return torch.cat(list(map(query_block, range(0, n_q, block_size))), dim=-2)
# bug-line: 31, 35
