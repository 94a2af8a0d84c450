# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_drops_crossing
"""Hugging Face's warper chain (TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper) as three
functions; the top-p one removes every token whose cumulative probability exceeds top_p, the crossing
token included (the shift by one is missing)."""

import torch


def temperature_warp(scores, temperature):
    return scores / temperature


def top_k_warp(scores, top_k):
    if top_k <= 0:
        return scores
    kth = torch.topk(scores, top_k)[0][..., -1, None]
    return scores.masked_fill(scores < kth, -float("inf"))


def top_p_warp(scores, top_p):
    if top_p >= 1.0:
        return scores
    sorted_logits, sorted_indices = torch.sort(scores, descending=True)
    cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    sorted_indices_to_remove = cumulative_probs > top_p
    sorted_indices_to_remove[..., 0] = False
    indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
    return scores.masked_fill(indices_to_remove, -float("inf"))


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    scores = top_p_warp(top_k_warp(temperature_warp(logits, temperature), top_k), top_p)
    return torch.softmax(scores, dim=-1)
# bug-line: 27
