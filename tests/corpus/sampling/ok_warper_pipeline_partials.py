# attnprep: sampling
# expect: passed
"""Correct: warpers as functools.partial objects in a list applied with functools.reduce, top-p with
an ascending sort (Hugging Face's way) and the 1 - top_p test."""
import functools

import torch


def _temperature(z, t):
    return z / t


def _top_k(z, k):
    if k <= 0:
        return z
    thresh = torch.topk(z, min(k, z.size(-1)), dim=-1).values[..., -1, None]
    return torch.where(z < thresh, torch.full_like(z, -float("inf")), z)


def _top_p(z, p):
    if p >= 1.0:
        return z
    sorted_z, idx = torch.sort(z, descending=False)
    cum = sorted_z.softmax(-1).cumsum(-1)
    remove = cum <= (1 - p)
    remove[..., -1:] = False
    return z.masked_fill(remove.scatter(1, idx, remove), -float("inf"))


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    steps = [functools.partial(_temperature, t=temperature), functools.partial(_top_k, k=top_k),
             functools.partial(_top_p, p=top_p)]
    z = functools.reduce(lambda acc, f: f(acc), steps, logits)
    return z.softmax(-1)
