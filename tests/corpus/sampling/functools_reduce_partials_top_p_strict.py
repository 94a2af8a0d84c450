# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_drops_crossing
"""A pipeline of functools.partial stages folded with functools.reduce, each stage logits -> logits
(-inf for removed tokens), the probabilities taken once at the end."""
from functools import partial, reduce

import torch


def _temperature(logits, t):
    return logits / t


def _top_k(logits, k):
    if k <= 0 or k >= logits.shape[-1]:
        return logits
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth, float("-inf"))


def _top_p(logits, p):
    if p >= 1.0:
        return logits
    sorted_logits, idx = torch.sort(logits, dim=-1, descending=True)
    cum = sorted_logits.softmax(-1).cumsum(-1)
    keep_sorted = cum <= p
    keep_sorted[..., 0] = True
    keep = torch.zeros_like(keep_sorted).scatter(-1, idx, keep_sorted)
    return logits.masked_fill(~keep, float("-inf"))


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    stages = [partial(_temperature, t=temperature), partial(_top_k, k=top_k), partial(_top_p, p=top_p)]
    out = reduce(lambda acc, f: f(acc), stages, logits.float())
    return out.softmax(-1)
# bug-line: 27
