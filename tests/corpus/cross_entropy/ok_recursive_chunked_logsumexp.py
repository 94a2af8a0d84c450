# attnprep: cross_entropy
# expect: passed
"""Correct: the log-sum-exp over the vocabulary computed by recursion on halves
(lse(x) = logaddexp-by-hand of lse(left), lse(right), each with its own max), as a chunked-vocab
kernel's reference would, the smoothed term as lse - mean(logits), ignored targets dropped with
boolean indexing before the mean."""

import torch


def lse(x):
    V = x.shape[-1]
    if V <= 8:
        m = x.amax(-1, keepdim=True)
        return (m + (x - m).exp().sum(-1, keepdim=True).log()).squeeze(-1)
    a, b = lse(x[..., : V // 2]), lse(x[..., V // 2 :])
    hi, lo = torch.maximum(a, b), torch.minimum(a, b)
    return hi + torch.log1p(torch.exp(lo - hi))


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    x = logits.reshape(-1, V)[targets.reshape(-1) != ignore_index]
    t = targets.reshape(-1)[targets.reshape(-1) != ignore_index]
    z = lse(x)
    nll = z - x.gather(-1, t[:, None]).squeeze(-1)
    smooth = z - x.mean(-1)
    loss = (1 - label_smoothing) * nll + label_smoothing * smooth
    return loss.mean()
