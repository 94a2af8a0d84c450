# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_mean_includes_ignored
"""optax-style: a one-hot of the targets (ignored ones clamped to class 0 and weighted 0), the loss per
token as -sum(onehot * log_softmax); the mean is then taken over every token, ignored ones included."""

import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    z = logits.float().reshape(-1, V)
    t = targets.reshape(-1)
    valid = t != ignore_index
    z = z - z.amax(-1, keepdim=True)
    log_p = z - z.exp().sum(-1, keepdim=True).log()
    onehot = torch.nn.functional.one_hot(torch.where(valid, t, 0), V).float()
    soft = onehot * (1 - label_smoothing) + label_smoothing / V
    per_token = -(soft * log_p).sum(-1) * valid
    return (per_token.sum() / t.numel()).to(logits.dtype)
# bug-line: 20
