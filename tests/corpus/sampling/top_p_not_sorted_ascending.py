# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_not_sorted
"""Sorted like Hugging Face (ascending) but tested like the descending rule: the least probable
tokens are kept."""
import torch
import torch.nn.functional as F


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    logits = logits / temperature
    if top_k > 0:
        v, _ = torch.topk(logits, top_k)
        logits = torch.where(logits < v[:, [-1]], -float("inf"), logits)
    if top_p < 1.0:
        sorted_logits, sorted_indices = torch.sort(logits, descending=False)
        cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        sorted_indices_to_remove = cumulative_probs > top_p
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
        logits = logits.masked_fill(indices_to_remove, -float("inf"))
    return F.softmax(logits, dim=-1)
# bug-line: 16, 18
