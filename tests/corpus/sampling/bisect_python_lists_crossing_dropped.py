# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_drops_crossing
"""Rows handled as Python lists: each row's probabilities sorted with `sorted(range(V), key=...)`,
the cumulative mass from itertools.accumulate, the cut found with bisect; top-k with
heapq.nlargest; the kept indices written back into a zero row."""
import bisect
import heapq
import itertools

import torch


def row_keep(p_row, top_k, top_p):
    V = len(p_row)
    idx = list(range(V))
    if top_k > 0:
        idx = heapq.nlargest(top_k, idx, key=lambda i: p_row[i])
    if top_p < 1.0:
        mass = sum(p_row[i] for i in idx)
        idx = sorted(idx, key=lambda i: -p_row[i])
        cum = list(itertools.accumulate(p_row[i] / mass for i in idx))
        cut = bisect.bisect_left(cum, top_p)
        idx = idx[:max(cut, 1)]
    return idx


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    scaled = logits / temperature
    probs = torch.softmax(scaled.double(), dim=-1)
    keep = torch.zeros_like(logits, dtype=torch.bool)
    for b, row in enumerate(probs.tolist()):
        keep[b, row_keep(row, top_k, top_p)] = True
    return torch.softmax(scaled.masked_fill(~keep, float("-inf")), dim=-1)
# bug-line: 24
