# attnprep: sampling
# expect: wrong_output
# diagnosis: temperature_after_softmax
"""Temperature on the probabilities: p / T, renormalised, which cancels T."""
import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    probs = torch.softmax(logits, dim=-1)
    probs = probs / temperature
    probs = probs / probs.sum(dim=-1, keepdim=True)
    if top_k > 0:
        kth = torch.topk(probs, top_k, dim=-1).values[:, -1:]
        probs = probs.masked_fill(probs < kth, 0.0)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    if top_p < 1.0:
        sorted_probs, idx = probs.sort(dim=-1, descending=True)
        remove = (sorted_probs.cumsum(-1) - sorted_probs) >= top_p
        probs = probs.masked_fill(remove.scatter(-1, idx, remove), 0.0)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs
# bug-line: 9, 10
