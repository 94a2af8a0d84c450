# attnprep: min_p
# expect: wrong_output
# diagnosis: min_p_not_renormalised
"""Zeroes the removed tokens in place of a copy and returns the rest as they are."""
import torch


def min_p_probs(logits, min_p=0.1, temperature=1.0):
    probs = torch.softmax(logits / temperature, dim=-1)
    cut = probs.amax(dim=-1, keepdim=True) * min_p
    return probs * (probs >= cut)
