# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: label_smoothing_over_v_minus_1 + cross_entropy_mean_includes_ignored
"""JAX / optax habits in torch: `smooth_labels(one_hot, alpha)` building a target distribution,
`softmax_cross_entropy(logits, labels)` = -sum(labels * log_softmax), a `where` mask, `jnp.mean`
of the masked losses. Two slips: the smoothing spreads alpha over the V - 1 other classes
(1 - alpha on the target, alpha / (V - 1) elsewhere), and the final mean divides by every target,
ignored ones included."""

import torch


def log_softmax(x, axis=-1):
    shifted = x - x.amax(axis=axis, keepdim=True) if hasattr(x, "amax") else x
    return shifted - shifted.exp().sum(axis, keepdim=True).log()


def smooth_labels(one_hot, alpha):
    V = one_hot.shape[-1]
    return one_hot * (1.0 - alpha) + (1.0 - one_hot) * alpha / (V - 1)


def softmax_cross_entropy(logits, labels):
    return -(labels * log_softmax(logits, axis=-1)).sum(-1)


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    logits, targets = logits.reshape(-1, V), targets.reshape(-1)
    valid = targets != ignore_index
    safe = torch.where(valid, targets, 0)
    labels = torch.nn.functional.one_hot(safe, V).to(logits.dtype)
    if label_smoothing > 0:
        labels = smooth_labels(labels, label_smoothing)
    losses = torch.where(valid, softmax_cross_entropy(logits, labels), 0.0)
    return losses.mean()
# bug-line: 20, 36
