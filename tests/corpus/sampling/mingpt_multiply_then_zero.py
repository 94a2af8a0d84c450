# attnprep: sampling
# expect: wrong_output
# diagnosis: temperature_multiplied + sampling_not_renormalised
"""minGPT's generate loop cut down to the distribution: logits scaled by the temperature, then top-k
and top-p zero the removed probabilities of one softmax."""
import torch
import torch.nn.functional as F


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    logits = logits * temperature
    probs = F.softmax(logits, dim=-1)
    if top_k:
        v, _ = torch.topk(logits, top_k)
        probs[logits < v[:, [-1]]] = 0.0
    if top_p < 1.0:
        sorted_probs, idx = torch.sort(probs, descending=True, dim=-1)
        cum = torch.cumsum(sorted_probs, dim=-1)
        remove_sorted = (cum - sorted_probs) >= top_p
        remove = remove_sorted.scatter(1, idx, remove_sorted)
        probs = probs.masked_fill(remove, 0.0)
    return probs
# bug-line: 11, 22
