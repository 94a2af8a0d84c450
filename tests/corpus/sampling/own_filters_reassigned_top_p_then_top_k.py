# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_before_top_k
"""Plain functions, one filter each (`scale`, `keep_top_k`, `keep_nucleus`), applied as reassignments
of one `scores` under `if` guards, a Megatron-like `-inf` filter value, renormalised by a final softmax."""
import torch

FILTER = float("-inf")


def scale(scores, temperature):
    return scores / temperature


def keep_top_k(scores, k):
    k = min(k, scores.size(-1))
    threshold = scores.topk(k, dim=-1).values[:, -1:]
    return scores.masked_fill(scores < threshold, FILTER)


def keep_nucleus(scores, p):
    sorted_scores, idx = scores.sort(dim=-1, descending=True)
    probs = sorted_scores.softmax(dim=-1)
    mass_before = probs.cumsum(dim=-1) - probs
    drop_sorted = mass_before >= p
    drop = drop_sorted.scatter(-1, idx, drop_sorted)
    return scores.masked_fill(drop, FILTER)


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    scores = scale(logits, temperature)
    if top_p < 1.0:
        scores = keep_nucleus(scores, top_p)
    if top_k > 0:
        scores = keep_top_k(scores, top_k)
    return scores.softmax(dim=-1)
# bug-line: 32, 33, 34, 35
