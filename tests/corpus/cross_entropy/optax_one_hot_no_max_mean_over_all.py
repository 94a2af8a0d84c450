# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_no_max + cross_entropy_mean_includes_ignored
"""optax's softmax_cross_entropy ported to torch: the labels made one-hot (F.one_hot of the clamped
targets), the negative log-likelihood as -sum(labels * log_probs), the smoothing term as a separate
mean of -log_probs (keeping the one-hot hard), a `where` zeroing the ignored ones, jnp.mean habits.
Two slips: its log-softmax is logits - log(sum(exp(logits))) with no max subtracted, and the mean is
taken over every target, the ignored ones included."""

import torch
import torch.nn.functional as F


def log_softmax(logits):
    return logits - torch.log(torch.sum(torch.exp(logits), dim=-1, keepdims=True))


def softmax_cross_entropy(logits, labels_one_hot):
    return -torch.sum(labels_one_hot * log_softmax(logits), dim=-1)


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    logits, targets = logits.reshape(-1, V), targets.reshape(-1)
    valid = targets != ignore_index
    labels = F.one_hot(torch.where(valid, targets, 0), V).to(logits.dtype)
    loss = (1.0 - label_smoothing) * softmax_cross_entropy(logits, labels)
    if label_smoothing > 0:
        loss = loss + label_smoothing * -log_softmax(logits).mean(dim=-1)
    loss = torch.where(valid, loss, 0.0)
    return torch.mean(loss)
# bug-line: 15, 31
