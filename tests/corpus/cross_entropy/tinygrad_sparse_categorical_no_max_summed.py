# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_no_max + cross_entropy_sum_not_mean
"""tinygrad's Tensor.sparse_categorical_crossentropy transcribed: a one-hot built by comparing an
expanded arange with the targets, the loss mask multiplied in, smoothing as label_smoothing times the
masked mean of the log-probabilities. Two slips: its own log_softmax exponentiates the raw logits (no
max subtracted), and the total is returned without dividing by the number of kept targets."""

import torch


def log_softmax(x, axis=-1):
    return x - x.exp().sum(axis, keepdim=True).log()


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    Y = targets.reshape(-1)
    log_probs, loss_mask = log_softmax(logits.reshape(-1, V)), (Y != ignore_index)
    y_counter = torch.arange(V, device=logits.device).unsqueeze(0).expand(Y.numel(), V)
    y = (y_counter == Y.reshape(-1, 1)) * loss_mask.reshape(-1, 1)
    smoothing = label_smoothing * (log_probs.mean(-1) * loss_mask).sum()
    return -((1 - label_smoothing) * (log_probs * y).sum() + smoothing)
# bug-line: 13, 23
