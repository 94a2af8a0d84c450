# attnprep: cross_entropy
# expect: passed
"""Correct: a generator over rows (numpy-habit, math on Python floats avoided), torch.stack of per-row losses."""
import torch


def _rows(x, y, ignore_index, eps):
    for row, t in zip(x, y):
        if int(t) == ignore_index:
            continue
        m = row.max()
        lse = m + torch.log(torch.sum(torch.exp(row - m)))
        nll = lse - row[t]
        yield (1 - eps) * nll + eps * (lse - row.mean())


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    losses = list(_rows(logits.reshape(-1, V), targets.reshape(-1), ignore_index, label_smoothing))
    return torch.stack(losses).mean()
