# attnprep: sampling
# expect: wrong_output
# diagnosis: sampling_not_renormalised
"""Top-k on the logits and a softmax (renormalised so far), then top-p zeroes probabilities and
nothing renormalises them again."""
import torch
import torch.nn.functional as F


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    logits = logits / temperature
    if top_k > 0:
        v, _ = torch.topk(logits, top_k)
        logits = logits.masked_fill(logits < v[:, [-1]], float("-inf"))
    probs = F.softmax(logits, dim=-1)
    if top_p < 1.0:
        sorted_probs, sorted_idx = torch.sort(probs, descending=True)
        drop = torch.cumsum(sorted_probs, dim=-1) - sorted_probs >= top_p
        probs = probs.masked_fill(drop.scatter(1, sorted_idx, drop), 0.0)
    return probs
# bug-line: 19, 20
