# attnprep: sampling
# expect: passed
"""Correct: the distribution a sampler draws from as torch.distributions.Categorical(logits=...) over
the filtered logits (-inf where removed), returned as its .probs; top-k by the k-th value of a
descending sort, top-p by an exclusive cumulative sum scattered back to vocabulary order."""

import torch
from torch.distributions import Categorical


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    logits = logits / temperature
    if top_k > 0:
        kth = logits.sort(dim=-1, descending=True).values[..., top_k - 1, None]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        probs = Categorical(logits=logits).probs
        sp, idx = probs.sort(dim=-1, descending=True)
        exclusive = sp.cumsum(-1) - sp
        drop_sorted = exclusive >= top_p
        drop = drop_sorted.scatter(-1, idx, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return Categorical(logits=logits).probs
