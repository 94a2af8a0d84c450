# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_not_carried
"""Recursion instead of loops: `_rows(i)` handles one query block and recurses on the next,
`_keys(j, state)` folds one key block into the running (m, l, acc) state and recurses on the
following block (a tail call, as a functional programmer writes a fold). The new running max is
taken from the current block alone, not carried across blocks."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    scale = 1 / math.sqrt(D)

    def _keys(i, qb, j, end, state):
        if j >= end:
            return state
        m, l, acc = state
        kb, vb = k[:, :, j:j + block_size], v[:, :, j:j + block_size]
        s = (qb @ kb.transpose(-1, -2)) * scale
        if is_causal:
            r = torch.arange(i, i + qb.shape[2], device=q.device).unsqueeze(-1)
            c = torch.arange(j, j + kb.shape[2], device=q.device).unsqueeze(0)
            s = s.masked_fill(c > r, float("-inf"))
        m_new = s.amax(dim=-1, keepdim=True)
        p = (s - m_new).exp()
        a = (m - m_new).exp()
        state = (m_new, a * l + p.sum(-1, keepdim=True), a * acc + p @ vb)
        del s, p, a  # nothing of this tile stays alive in the frame while the next one runs
        return _keys(i, qb, j + block_size, end, state)

    def _rows(i):
        if i >= L:
            return []
        qb = q[:, :, i:i + block_size]
        n = qb.shape[2]
        init = (qb.new_full((B, H, n, 1), float("-inf")), qb.new_zeros(B, H, n, 1), qb.new_zeros(B, H, n, D))
        end = min(S, i + n) if is_causal else S
        m, l, acc = _keys(i, qb, 0, end, init)
        return [acc / l] + _rows(i + block_size)

    return torch.cat(_rows(0), dim=2)
# bug-line: 29
