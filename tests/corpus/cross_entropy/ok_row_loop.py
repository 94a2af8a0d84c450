# attnprep: cross_entropy
# expect: passed
"""A Python loop over the rows, one row's log-sum-exp at a time (interview whiteboard style)."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.size(-1)
    rows = logits.reshape(-1, V)
    labels = targets.reshape(-1).tolist()
    total = logits.new_zeros(())
    count = 0
    for i, t in enumerate(labels):
        if t == ignore_index:
            continue
        row = rows[i]
        m = row.max()
        lse = m + torch.log(torch.sum(torch.exp(row - m)))
        loss = lse - row[t]
        if label_smoothing > 0:
            loss = (1 - label_smoothing) * loss + label_smoothing * (lse - row.mean())
        total = total + loss
        count += 1
    return total / count
