# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_not_sorted
"""functools.partial habits: the helpers are bound once at import with their keywords
(rank = partial(torch.sort, dim=-1, descending=...)); the sort for the nucleus was bound ascending,
so the cumulative sum starts from the least probable token."""
from functools import partial

import torch

rank = partial(torch.sort, dim=-1, descending=False)
renorm = partial(torch.softmax, dim=-1)


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    z = logits / temperature
    if top_k > 0:
        kth = torch.topk(z, top_k, dim=-1).values[:, -1:]
        z = z.masked_fill(z < kth, float("-inf"))
    if top_p < 1.0:
        p = renorm(z)
        sp, order = rank(p)
        drop_sorted = sp.cumsum(-1) - sp >= top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        z = z.masked_fill(drop, float("-inf"))
    return renorm(z)
# bug-line: 11
