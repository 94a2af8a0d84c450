# attnprep: sampling
# expect: wrong_output
# diagnosis: top_p_not_sorted
"""The cumulative sum taken in vocabulary order: no sort at all."""
import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    logits = logits / temperature
    if top_k > 0:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        probs = torch.softmax(logits, dim=-1)
        before = probs.cumsum(dim=-1) - probs
        logits = logits.masked_fill(before >= top_p, float("-inf"))
    return torch.softmax(logits, dim=-1)
