# attnprep: cross_entropy
# expect: passed
"""Correct: torch.set_default_dtype(torch.float64) at the top of the file (a numerics habit); the loss
computed in float64 by hand (max, log-sum-exp, gather) and returned in the logits' dtype."""

import torch

torch.set_default_dtype(torch.float64)


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    x = logits.reshape(-1, V).double()
    t = targets.reshape(-1)
    valid = t != ignore_index
    m = x.max(-1, keepdim=True).values
    logp = x - m - torch.log(torch.exp(x - m).sum(-1, keepdim=True))
    nll = -logp.gather(-1, t.clamp(min=0)[:, None])[:, 0]
    loss = (1 - label_smoothing) * nll - label_smoothing * logp.mean(-1)
    loss = torch.where(valid, loss, torch.zeros(()))
    return (loss.sum() / valid.sum()).to(logits.dtype)
