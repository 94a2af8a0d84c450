# attnprep: sampling
# expect: passed
"""Hugging Face's warpers in one function: top-k by the k-th value, top-p with an ascending sort and
the complementary test (cumsum <= 1 - top_p removed), torch.where fills, one softmax at the end."""

import torch


def sampling_probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    scores = logits / temperature
    neg = float("-inf")
    if top_k > 0:
        top_k = min(top_k, scores.size(-1))
        kth = torch.topk(scores, top_k)[0][..., -1, None]
        scores = torch.where(scores < kth, neg, scores)
    if top_p < 1.0:
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        sorted_remove = cumulative_probs <= (1 - top_p)
        sorted_remove[..., -1:] = False
        remove = sorted_remove.scatter(1, sorted_indices, sorted_remove)
        scores = scores.masked_fill(remove, neg)
    return torch.softmax(scores, dim=-1)
