# attnprep: cross_entropy
# expect: passed
"""Correct: ignored targets dropped by boolean indexing, the max detached, smoothing as torch.lerp(nll, smooth, eps)."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.size(-1)
    z = logits.reshape(-1, V)
    t = targets.reshape(-1)
    keep = t != ignore_index
    z = z[keep]
    t = t[keep]
    m = z.detach().amax(-1, keepdim=True)          # the shift needs no gradient
    lse = (z - m).exp().sum(-1).log() + m.squeeze(-1)
    nll = lse - z.gather(-1, t[:, None]).squeeze(-1)
    smooth = lse - z.mean(-1)                      # mean over V of -log p
    return torch.lerp(nll, smooth, label_smoothing).mean()
