# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_before_top_k
"""The nucleus taken on the full distribution, then cropped to the top k."""
import torch


def _top_p(logits, top_p):
    probs = logits.softmax(-1)
    sorted_probs, idx = probs.sort(-1, descending=True)
    remove = sorted_probs.cumsum(-1) - sorted_probs >= top_p
    return logits.masked_fill(remove.scatter(-1, idx, remove), float("-inf"))


def _top_k(logits, top_k):
    kth = logits.topk(top_k, -1).values[..., -1:]
    return logits.masked_fill(logits < kth, float("-inf"))


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    logits = logits / temperature
    if top_p < 1.0:
        logits = _top_p(logits, top_p)
    if top_k > 0:
        logits = _top_k(logits, top_k)
    return logits.softmax(-1)
