# attnprep: min_p
# expect: passed
"""Hugging Face's MinPLogitsWarper style: finfo.min fill, then softmax."""
import torch


def min_p_probs(logits, min_p=0.1, temperature=1.0):
    scores = logits / temperature
    probs = torch.softmax(scores, dim=-1)
    top = probs.max(dim=-1, keepdim=True).values
    remove = probs < min_p * top
    return torch.softmax(scores.masked_fill(remove, torch.finfo(scores.dtype).min), dim=-1)
