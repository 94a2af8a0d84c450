# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: ignore_index_hardcoded
"""A filter-first style: the kept rows chosen by comparing with the literal -100 (`targets != -100`,
PyTorch's default written out), the gather made safe by clamp(min=0). With the default ignore_index
every case is right; with another ignore_index (-1) its targets are counted, as class 0."""

import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    x, t = logits.reshape(-1, V), targets.reshape(-1)
    keep = t != -100
    lse = x.amax(-1) + (x - x.amax(-1, keepdim=True)).exp().sum(-1).log()
    nll = lse - x.gather(-1, t.clamp(min=0)[:, None]).squeeze(-1)
    smooth = lse - x.mean(-1)
    loss = (1 - label_smoothing) * nll + label_smoothing * smooth
    return loss[keep].sum() / keep.sum()
# bug-line: 14
