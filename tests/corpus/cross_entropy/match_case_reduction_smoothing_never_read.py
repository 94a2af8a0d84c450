# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: label_smoothing_ignored
"""A `match` on the logits' rank (`case (N, V)` / `case (B, T, V)` with captured sizes) and on a
`reduction` string, the log-sum-exp written with the max. The label_smoothing parameter is accepted
and never read: unsmoothed cases are right, every smoothed one is the plain nll."""

import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    match tuple(logits.shape):
        case (n, v):
            flat, tgt = logits, targets
        case (b, t, v):
            flat, tgt = logits.reshape(b * t, v), targets.reshape(b * t)
        case _:
            raise ValueError(f"logits of rank {logits.dim()}")
    mx = flat.max(dim=1, keepdim=True).values
    logz = mx.squeeze(1) + torch.log(torch.exp(flat - mx).sum(dim=1))
    counted = tgt != ignore_index
    tgt_logit = flat.gather(1, tgt.clamp(min=0).masked_fill(~counted, 0)[:, None]).squeeze(1)
    per_token = (logz - tgt_logit) * counted
    match reduction:
        case "sum":
            return per_token.sum()
        case "mean":
            return per_token.sum() / counted.sum()
        case _:
            return per_token
# bug-line: 23
