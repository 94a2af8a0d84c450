# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_no_max + cross_entropy_sum_not_mean
"""Two mistakes: log(sum(exp(x))) without the max, and the sum of the losses instead of their mean."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.size(-1)
    logits, targets = logits.view(-1, V), targets.view(-1)
    logp = logits - logits.exp().sum(-1, keepdim=True).log()
    keep = targets != ignore_index
    nll = -logp.gather(1, targets.clamp(min=0).unsqueeze(1)).squeeze(1)
    if label_smoothing:
        nll = (1 - label_smoothing) * nll - label_smoothing * logp.mean(-1)
    return nll[keep].sum()
