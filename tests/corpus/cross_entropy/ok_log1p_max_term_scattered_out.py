# attnprep: cross_entropy
# expect: passed
"""Correct: lse written as max + log1p(sum of exp(z - max) over the other entries), the max's own term
scattered to 0; the count with torch.count_nonzero."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    z = logits.reshape(-1, V)
    y = targets.reshape(-1)
    top, arg = z.max(-1, keepdim=True)
    e = torch.exp(z - top)
    e = e.scatter(-1, arg, torch.zeros_like(top))          # drop the max's own exp(0) = 1
    lse = top.squeeze(-1) + torch.log1p(e.sum(-1))
    keep = y != ignore_index
    tgt = z.gather(-1, y.clamp_min(0).unsqueeze(-1)).squeeze(-1)
    loss = (1 - label_smoothing) * (lse - tgt) + label_smoothing * (lse - z.mean(-1))
    return torch.where(keep, loss, 0.0).sum() / torch.count_nonzero(keep)
