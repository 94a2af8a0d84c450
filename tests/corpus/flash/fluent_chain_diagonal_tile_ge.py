# attnprep: flash
# expect: wrong_output
# diagnosis: flash_causal_off_by_one
"""Fluent method chains for every step (`s.masked_fill(...).amax(-1, keepdim=True).maximum(m)`,
`acc.mul(alpha).add(p.matmul(vb))`), tiles addressed with Tensor.narrow, the causal test written as
`cols >= rows` on the diagonal tile: each query also loses its own key. Right without is_causal."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.size(2)
    rows_out = []
    for i in range(0, L, block_size):
        bq = min(block_size, L - i)
        qb = q.narrow(2, i, bq).mul(1.0 / math.sqrt(D))
        m = qb.new_full((B, H, bq, 1), float("-inf"))
        l = qb.new_zeros(B, H, bq, 1)
        acc = qb.new_zeros(B, H, bq, D)
        stop = min(S, i + bq) if is_causal else S
        for j in range(0, stop, block_size):
            bk = min(block_size, stop - j)
            kb, vb = k.narrow(2, j, bk), v.narrow(2, j, bk)
            s = qb.matmul(kb.transpose(-2, -1))
            if is_causal and j + bk > i:
                rows = torch.arange(i, i + bq, device=q.device).unsqueeze(1)
                cols = torch.arange(j, j + bk, device=q.device).unsqueeze(0)
                s = s.masked_fill(cols.ge(rows), float("-inf"))
            m_new = s.amax(-1, keepdim=True).maximum(m)
            p = s.sub(m_new).exp()
            alpha = m.sub(m_new).exp()
            l = l.mul(alpha).add(p.sum(-1, keepdim=True))
            acc = acc.mul(alpha).add(p.matmul(vb))
            m = m_new
        rows_out.append(acc.div(l))
    return torch.cat(rows_out, dim=2)
# bug-line: 31
