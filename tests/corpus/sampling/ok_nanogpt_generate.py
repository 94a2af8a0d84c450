# attnprep: sampling
# expect: passed
"""nanoGPT's generate: scale by the temperature (a new tensor), crop to the top k in place on it,
then a nucleus filter written the same way."""
import torch
import torch.nn.functional as F


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    # pluck the logits at the final step and scale by desired temperature
    logits = logits / temperature
    # optionally crop the logits to only the top k options
    if top_k:
        v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
        logits[logits < v[:, [-1]]] = -float('Inf')
    if top_p < 1.0:
        probs = F.softmax(logits, dim=-1)
        sorted_probs, sorted_idx = torch.sort(probs, dim=-1, descending=True)
        exclusive = torch.cumsum(sorted_probs, dim=-1) - sorted_probs
        sorted_remove = exclusive >= top_p
        remove = torch.zeros_like(sorted_remove)
        remove.scatter_(1, sorted_idx, sorted_remove)
        logits[remove] = -float('Inf')
    # apply softmax to convert logits to (normalized) probabilities
    return F.softmax(logits, dim=-1)
