# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_drops_crossing
"""Hugging Face warper style (ascending sort, cumulative sum from the least probable token); the
removal test `cumulative <= 1 - top_p` is one token off: the token that crosses p is removed too."""

import torch


def top_k_mask(logits, top_k):
    top_k = min(top_k, logits.size(-1))
    indices_to_remove = logits < torch.topk(logits, top_k)[0][..., -1, None]
    return ~indices_to_remove


def top_p_mask(logits, top_p):
    sorted_logits, sorted_indices = torch.sort(logits, descending=True)
    cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    sorted_keep = cumulative_probs <= top_p
    sorted_keep[..., 0] = True
    keep = sorted_keep.scatter(1, sorted_indices, sorted_keep)
    return keep


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    scores = logits / temperature
    if top_k > 0:
        scores = scores.masked_fill(~top_k_mask(scores, top_k), -float("Inf"))
    if top_p < 1.0:
        scores = scores.masked_fill(~top_p_mask(scores, top_p), -float("Inf"))
    return torch.softmax(scores, dim=-1)
# bug-line: 19
