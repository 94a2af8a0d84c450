# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_no_max + cross_entropy_sum_not_mean
"""log-sum-exp without the max (overflows on large logits) and the loss summed over the kept targets
instead of averaged; torch.where for the ignored ones."""

import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    z = logits.view(-1, V)
    t = targets.view(-1)
    lse = torch.log(torch.exp(z).sum(-1))
    valid = t != ignore_index
    picked = z.gather(1, torch.where(valid, t, 0).unsqueeze(1)).squeeze(1)
    nll = lse - picked
    if label_smoothing:
        nll = (1 - label_smoothing) * nll + label_smoothing * (lse - z.mean(-1))
    return torch.where(valid, nll, torch.zeros_like(nll)).sum()
