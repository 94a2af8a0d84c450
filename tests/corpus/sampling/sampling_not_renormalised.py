# attnprep: sampling
# expect: wrong_output
# diagnosis: sampling_not_renormalised
"""Filters applied to the probabilities by zeroing them; the survivors never renormalised."""
import torch


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    probs = torch.softmax(logits / temperature, dim=-1)
    keep = torch.ones_like(probs, dtype=torch.bool)
    if top_k > 0:
        keep &= probs >= probs.topk(top_k, dim=-1).values[:, -1:]
    if top_p < 1.0:
        kept = probs * keep
        kept = kept / kept.sum(-1, keepdim=True)
        s, order = kept.sort(-1, descending=True)
        nucleus = (s.cumsum(-1) - s) < top_p
        keep &= torch.zeros_like(nucleus).scatter(-1, order, nucleus)
    return probs * keep
