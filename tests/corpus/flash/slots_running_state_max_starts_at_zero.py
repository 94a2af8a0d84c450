# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_init_zero
"""A `__slots__` running-state class (`Running(m, l, o)`) with an `update(s, v)` method and an
`out` property, one per query block, the key blocks walked with enumerate. The running max starts
at zeros instead of -inf: exact in exact arithmetic only while some score exceeds 0; a row whose
scores are all very negative underflows exp(s - 0) to 0 and divides 0 by 0."""

import math

import torch


class Running:
    __slots__ = ("m", "l", "o")

    def __init__(self, shape, d, like):
        self.m = like.new_zeros(shape + (1,))
        self.l = like.new_zeros(shape + (1,))
        self.o = like.new_zeros(shape + (d,))

    def update(self, s, v):
        m_new = torch.maximum(self.m, s.amax(-1, keepdim=True))
        a = torch.exp(self.m - m_new)
        p = torch.exp(s - m_new)
        self.l = a * self.l + p.sum(-1, keepdim=True)
        self.o = a * self.o + p @ v
        self.m = m_new

    @property
    def out(self):
        return self.o / self.l


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    res = []
    for i in range(0, L, block_size):
        qb = q[:, :, i:i + block_size] / math.sqrt(D)
        n = qb.shape[2]
        st = Running((B, H, n), D, qb)
        for _, j in enumerate(range(0, min(S, i + n) if is_causal else S, block_size)):
            kb, vb = k[:, :, j:j + block_size], v[:, :, j:j + block_size]
            s = qb @ kb.transpose(-2, -1)
            if is_causal:
                r = torch.arange(i, i + n, device=q.device)[:, None]
                c = torch.arange(j, j + kb.shape[2], device=q.device)[None, :]
                s = s.masked_fill(c > r, -math.inf)
            st.update(s, vb)
        res.append(st.out)
    return torch.cat(res, 2)
# bug-line: 18
