# attnprep: cross_entropy
# expect: passed
"""Correct: the target picked by an einsum against F.one_hot of the (clamped) targets rather than by
gather, the log-sum-exp by hand with the row max, smoothing as the mean over all V of -log p,
ignored targets weighted by a float keep vector, divided by its sum."""

import torch
import torch.nn.functional as F


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.size(-1)
    z = logits.reshape(-1, V)
    t = targets.reshape(-1)
    keep = (t != ignore_index).to(z.dtype)  # (N,)
    m = z.max(-1, keepdim=True).values
    lse = m.squeeze(-1) + (z - m).exp().sum(-1).log()  # (N,)
    onehot = F.one_hot(torch.where(t == ignore_index, 0, t), V).to(z.dtype)  # (N, V)
    picked = torch.einsum("nv,nv->n", z, onehot)
    nll = lse - picked
    uniform = lse - z.mean(-1)  # mean over the V classes of -log p
    loss = (1.0 - label_smoothing) * nll + label_smoothing * uniform
    return torch.einsum("n,n->", loss, keep) / keep.sum()
