# attnprep: min_p
# expect: passed
"""Zero then divide by the row sum."""
import torch


def min_p_probs(logits, min_p=0.1, temperature=1.0):
    p = (logits / temperature).softmax(-1)
    p = torch.where(p >= min_p * p.max(-1, keepdim=True)[0], p, torch.zeros_like(p))
    return p / p.sum(-1, keepdim=True)
