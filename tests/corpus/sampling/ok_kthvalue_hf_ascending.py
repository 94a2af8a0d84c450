# attnprep: sampling
# expect: passed
"""Correct: top-k by the k-th largest value from torch.kthvalue (V - k + 1 smallest), top-p exactly as
Hugging Face's TopPLogitsWarper (ascending sort, remove cumsum <= 1 - top_p, keep the last token), then
one softmax over the surviving logits."""
import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    scores = logits.float() / temperature
    V = scores.size(-1)
    if top_k > 0:
        kth = torch.kthvalue(scores, V - min(top_k, V) + 1, dim=-1, keepdim=True).values
        scores = scores.masked_fill(scores < kth, -float("inf"))
    if top_p < 1.0:
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        sorted_indices_to_remove = cumulative_probs <= (1 - top_p)
        sorted_indices_to_remove[..., -1:] = 0
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
        scores = scores.masked_fill(indices_to_remove, -float("inf"))
    return torch.softmax(scores, dim=-1).to(logits.dtype)
