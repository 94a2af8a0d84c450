# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_sum_not_mean
"""Hugging Face's loss_utils: `fixed_cross_entropy(source, target, num_items_in_batch=None,
ignore_index=-100)` with `reduction = "sum" if num_items_in_batch is not None else "mean"`, the loss
itself written by hand. The wrapper passes `num_items_in_batch=1` (meant as "one sequence"), so
the sum path runs and the loss is divided by 1: the sum of the kept losses."""

import torch


def _nll_terms(source, target, ignore_index):
    m = source.max(dim=-1, keepdim=True).values
    lse = (source - m).exp().sum(-1, keepdim=True).log() + m
    logp = source - lse
    keep = target != ignore_index
    picked = logp.gather(-1, torch.where(keep, target, torch.zeros_like(target)).unsqueeze(-1)).squeeze(-1)
    return -picked * keep, keep, logp


def fixed_cross_entropy(source, target, num_items_in_batch=None, ignore_index=-100, label_smoothing=0.0):
    reduction = "sum" if num_items_in_batch is not None else "mean"
    nll, keep, logp = _nll_terms(source, target, ignore_index)
    if label_smoothing > 0:
        nll = (1 - label_smoothing) * nll - label_smoothing * logp.mean(-1) * keep
    loss = nll.sum()
    if reduction == "sum":
        return loss / num_items_in_batch
    return loss / keep.sum()


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    return fixed_cross_entropy(logits.reshape(-1, V), targets.reshape(-1), num_items_in_batch=1,
                               ignore_index=ignore_index, label_smoothing=label_smoothing)
# bug-line: 34
