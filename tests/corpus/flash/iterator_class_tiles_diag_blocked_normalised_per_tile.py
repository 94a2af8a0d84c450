# attnprep: flash
# expect: wrong_output
# diagnosis: flash_causal_off_by_one + flash_normalised_per_block
"""A hand-written iterator class (__iter__ / __next__ raising StopIteration) over key tiles, a state
updated in the loop body; query tiles by range."""
import math

import torch


class KeyTiles:
    def __init__(self, k, v, block):
        self.k, self.v, self.block = k, v, block
        self.start = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.start >= self.k.shape[-2]:
            raise StopIteration
        s, e = self.start, min(self.start + self.block, self.k.shape[-2])
        self.start = e
        return s, self.k[..., s:e, :], self.v[..., s:e, :]


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    scale = D**-0.5
    outs = []
    for qs in range(0, L, block_size):
        qb = q[:, :, qs : qs + block_size]
        rows = torch.arange(qs, qs + qb.shape[-2], device=q.device)
        m = torch.full(qb.shape[:-1] + (1,), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros_like(m)
        acc = torch.zeros_like(qb)
        for ks, kb, vb in KeyTiles(k, v, block_size):
            s = (qb @ kb.transpose(-2, -1)) * scale
            if is_causal:
                cols = torch.arange(ks, ks + kb.shape[-2], device=q.device)
                s = s.masked_fill(cols[None, :] >= rows[:, None], float("-inf"))
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            p = torch.exp(s - m_new)
            alpha = torch.exp(m - m_new)
            l = l * alpha + p.sum(-1, keepdim=True)
            acc = acc * alpha + (p / p.sum(-1, keepdim=True)) @ vb
            m = m_new
        outs.append(acc / l)
    return torch.cat(outs, dim=2)
# bug-line: 41, 46
