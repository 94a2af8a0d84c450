# attnprep: cross_entropy
# expect: passed
"""Correct, Megatron habits: a float loss_mask (targets != ignore_index), the logits upcast to
float64, predicted logits picked with a one-hot built by F.one_hot on the clamped targets, the
smoothing term as the sum of logp / V, loss = sum(losses * loss_mask) / loss_mask.sum()."""

import torch
import torch.nn.functional as F


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    vocab = logits.size(-1)
    x = logits.double().view(-1, vocab)
    tgt = targets.view(-1)
    loss_mask = (tgt != ignore_index).double()
    x = x - x.max(dim=-1, keepdim=True)[0]
    sum_exp = x.exp().sum(dim=-1)
    log_probs = x - sum_exp.log()[:, None]
    one_hot = F.one_hot(tgt.clamp(min=0), vocab).double()
    predicted = (log_probs * one_hot).sum(-1)
    losses = -(1 - label_smoothing) * predicted - label_smoothing * log_probs.sum(-1) / vocab
    return ((losses * loss_mask).sum() / loss_mask.sum()).to(logits.dtype)
