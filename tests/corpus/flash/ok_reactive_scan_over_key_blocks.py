# attnprep: flash
# expect: passed
"""Reactive-streams habits (RxPY): a small Stream with map / filter / scan / last operators; the
key blocks are a stream, filtered for causality, and the online softmax is a scan whose
accumulator is the (m, l, acc) triple."""
import math

import torch


class Stream:
    def __init__(self, items):
        self.items = items

    def map(self, fn):
        return Stream(fn(i) for i in self.items)

    def filter(self, pred):
        return Stream(i for i in self.items if pred(i))

    def scan(self, fn, seed):
        def gen():
            acc = seed
            for i in self.items:
                acc = fn(acc, i)
                yield acc
        return Stream(gen())

    def last(self, default=None):
        out = default
        for out in self.items:
            pass
        return out


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[-2]
    scale = 1 / math.sqrt(D)
    rows_out = []
    for i in range(0, L, block_size):
        qb = q[:, :, i:i + block_size] * scale
        bq = qb.shape[2]
        rows = torch.arange(i, i + bq, device=q.device)[:, None]

        def score(j, qb=qb, rows=rows):
            s = qb @ k[:, :, j:j + block_size].transpose(-2, -1)
            if is_causal:
                cols = torch.arange(j, j + s.shape[-1], device=q.device)[None, :]
                s = s.masked_fill(cols > rows, float("-inf"))
            return j, s

        def step(state, item):
            m, l, acc = state
            j, s = item
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            p = (s - m_new).exp()
            a = (m - m_new).exp()
            return m_new, a * l + p.sum(-1, keepdim=True), a * acc + p @ v[:, :, j:j + block_size]

        seed = (torch.full((B, H, bq, 1), float("-inf"), dtype=q.dtype, device=q.device),
                torch.zeros(B, H, bq, 1, dtype=q.dtype, device=q.device),
                torch.zeros(B, H, bq, D, dtype=q.dtype, device=q.device))
        m, l, acc = (Stream(range(0, S, block_size))
                     .filter(lambda j, i=i, bq=bq: not is_causal or j < i + bq)
                     .map(score)
                     .scan(step, seed)
                     .last(seed))
        rows_out.append(acc / l)
    return torch.cat(rows_out, dim=2)
