# attnprep: cross_entropy
# expect: error
# diagnosis: ignore_index_hardcoded
"""The target picked with a one-hot product (F.one_hot(idx, V) * logp summed), the log-softmax by hand
with the row max, the padding id written as the literal -100 it usually is: `torch.where(targets ==
-100, 0, targets)` for the indices and `targets != -100` for the weights. With another ignore_index
(-1) those targets are kept, and F.one_hot raises on the class -1."""

import torch
import torch.nn.functional as F


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    z = logits.reshape(-1, V)
    t = targets.reshape(-1)
    z = z - z.max(dim=-1, keepdim=True).values
    logp = z - z.exp().sum(dim=-1, keepdim=True).log()
    idx = torch.where(t == -100, 0, t)
    nll = -(F.one_hot(idx, V).to(logp.dtype) * logp).sum(dim=-1)
    loss = (1 - label_smoothing) * nll - label_smoothing * logp.mean(dim=-1)
    w = (t != -100).to(loss.dtype)
    return (loss * w).sum() / w.sum()
# bug-line: 19, 22
