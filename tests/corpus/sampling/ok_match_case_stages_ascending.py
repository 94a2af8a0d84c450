# attnprep: sampling
# expect: passed
"""Correct: the stages chosen with `match (top_k > 0, top_p < 1.0)`, top-p written as Hugging Face's
TopPLogitsWarper does (ascending sort, `cumsum <= 1 - top_p` removed, the last token always kept),
removed logits set to -inf once, one softmax at the end."""

import torch


def _top_k(logits, k):
    return logits.masked_fill(logits < logits.topk(k, dim=-1).values[..., -1, None], float("-inf"))


def _top_p(logits, p):
    sorted_logits, sorted_indices = torch.sort(logits, descending=False)
    cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    sorted_indices_to_remove = cumulative_probs <= (1 - p)
    sorted_indices_to_remove[..., -1:] = False
    indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
    return logits.masked_fill(indices_to_remove, float("-inf"))


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    scores = logits / temperature
    match (top_k > 0, top_p < 1.0):
        case (True, True):
            scores = _top_p(_top_k(scores, top_k), top_p)
        case (True, False):
            scores = _top_k(scores, top_k)
        case (False, True):
            scores = _top_p(scores, top_p)
        case _:
            pass
    return torch.softmax(scores, dim=-1)
