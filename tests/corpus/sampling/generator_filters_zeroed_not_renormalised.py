# attnprep: sampling
# expect: wrong_output
# diagnosis: sampling_not_renormalised
"""Filters as a generator pipeline: `filters()` yields the keep-masks that apply (top-k, then top-p
on the top-k survivors), `functools.reduce`-free `all()`-style folding with torch.logical_and,
the probabilities computed once from the tempered logits. The removed tokens are zeroed in that
full softmax and the rest is returned as it is: with no filter active it is right, with any filter
the kept probabilities no longer sum to 1."""

import torch


def filters(logits, top_k, top_p):
    keep = torch.ones_like(logits, dtype=torch.bool)
    if top_k > 0:
        keep = logits >= logits.topk(top_k, -1).values[:, -1:]
        yield keep
    if top_p < 1.0:
        p = logits.masked_fill(~keep, float("-inf")).softmax(-1)
        sp, idx = p.sort(-1, descending=True)
        yield torch.zeros_like(keep).scatter(-1, idx, (sp.cumsum(-1) - sp) < top_p)


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    logits = logits / temperature
    keep = torch.ones_like(logits, dtype=torch.bool)
    for mask in filters(logits, top_k, top_p):
        keep = torch.logical_and(keep, mask)
    probs = logits.softmax(-1)
    return probs * keep
# bug-line: 30
