# attnprep: cross_entropy
# expect: passed
"""One-hot targets mixed with the uniform distribution (the smoothed target), a dot product with
the log-probabilities."""
import torch
import torch.nn.functional as F


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    x = logits.reshape(-1, V)
    y = targets.reshape(-1)
    keep = y != ignore_index
    shifted = x - x.max(dim=1, keepdim=True)[0]
    log_p = shifted - torch.log(torch.sum(torch.exp(shifted), dim=1, keepdim=True))
    one_hot = F.one_hot(torch.where(keep, y, 0), num_classes=V).to(x.dtype)
    soft = one_hot * (1 - label_smoothing) + label_smoothing / V
    per_row = -(soft * log_p).sum(dim=1)
    return per_row[keep].mean()
