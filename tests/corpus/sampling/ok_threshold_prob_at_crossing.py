# attnprep: sampling
# expect: passed
"""Correct: top-p by a probability threshold: the smallest kept probability per row is the sorted
probability at the crossing index (the count of exclusive cumulative sums below top_p, minus one),
every token with a probability at least that is kept (no ties are graded); top-k likewise by the
k-th largest logit; renormalised by dividing by the kept mass."""

import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    x = logits / temperature
    if top_k > 0:
        kth = torch.topk(x, top_k, dim=-1).values[:, -1:]
        x = torch.where(x >= kth, x, torch.full_like(x, float("-inf")))
    p = torch.softmax(x, dim=-1)
    if top_p < 1.0:
        sp = torch.sort(p, dim=-1, descending=True).values
        n_keep = ((sp.cumsum(-1) - sp) < top_p).sum(-1, keepdim=True)  # at least 1
        threshold = sp.gather(-1, n_keep - 1)
        p = torch.where(p >= threshold, p, torch.zeros_like(p))
        p = p / p.sum(-1, keepdim=True)
    return p
