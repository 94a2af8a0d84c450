# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: label_smoothing_over_v_minus_1
"""The smoothed target as some papers write it: 1 - eps on the true class, eps / (V - 1) on each
other class (torch puts eps / V on every class, the true one included)."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.size(-1)
    x = logits.reshape(-1, V)
    y = targets.reshape(-1)
    keep = y != ignore_index
    m = x.max(-1, keepdim=True).values
    logp = x - m - (x - m).exp().sum(-1, keepdim=True).log()
    y0 = y.masked_fill(~keep, 0)
    dist = torch.full_like(logp, label_smoothing / (V - 1))
    dist.scatter_(1, y0[:, None], 1.0 - label_smoothing)
    loss = -(dist * logp).sum(-1)
    return loss[keep].mean()
# bug-line: 17
