# attnprep: sampling
# expect: wrong_output
# diagnosis: input_modified
"""nanoGPT's in-place crop, but the temperature division skipped at T = 1: logits[...] = -inf then
writes into the caller's tensor."""
import torch
import torch.nn.functional as F


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    if temperature != 1.0:
        logits = logits / temperature
    if top_k:
        v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
        logits[logits < v[:, [-1]]] = -float("Inf")
    if top_p < 1.0:
        sorted_probs, sorted_idx = torch.sort(F.softmax(logits, dim=-1), dim=-1, descending=True)
        sorted_remove = torch.cumsum(sorted_probs, dim=-1) - sorted_probs >= top_p
        logits[sorted_remove.scatter(1, sorted_idx, sorted_remove)] = -float("Inf")
    return F.softmax(logits, dim=-1)
