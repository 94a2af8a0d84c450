# attnprep: flash
# expect: wrong_output
# diagnosis: flash_causal_local_mask
"""A small state machine drives the loops (`state` in {"NEXT_ROWS", "NEXT_COLS", "EMIT", "DONE"},
a while loop dispatching on it), the online softmax in the "NEXT_COLS" state. The causal mask of a
tile is built from the tile's own row and column numbers (tril of a (bq, bk) ones), not from the
global positions: right on the diagonal tiles, wrong when a tile is below the diagonal."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    outs, state, i, j = [], "NEXT_ROWS", 0, 0
    while state != "DONE":
        if state == "NEXT_ROWS":
            if i >= L:
                state = "DONE"
                continue
            qb = q[:, :, i:i + block_size] / math.sqrt(D)
            n = qb.shape[2]
            m = torch.full((B, H, n, 1), -math.inf, dtype=q.dtype, device=q.device)
            l = torch.zeros((B, H, n, 1), dtype=q.dtype, device=q.device)
            acc = torch.zeros((B, H, n, D), dtype=q.dtype, device=q.device)
            j, stop = 0, (min(S, i + n) if is_causal else S)
            state = "NEXT_COLS"
        elif state == "NEXT_COLS":
            if j >= stop:
                state = "EMIT"
                continue
            kb, vb = k[:, :, j:j + block_size], v[:, :, j:j + block_size]
            s = qb @ kb.transpose(-1, -2)
            if is_causal:
                local = torch.ones(n, kb.shape[2], dtype=torch.bool, device=q.device).tril()
                s = s.masked_fill(~local, -math.inf)
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            a, p = torch.exp(m - m_new), torch.exp(s - m_new)
            l, acc, m = a * l + p.sum(-1, keepdim=True), a * acc + p @ vb, m_new
            j += block_size
        elif state == "EMIT":
            outs.append(acc / l)
            i += block_size
            state = "NEXT_ROWS"
    return torch.cat(outs, dim=2)
# bug-line: 37
