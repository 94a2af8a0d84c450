# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_sum_not_mean
"""reduction="sum" by accident: the losses of the kept targets added up, never divided."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.size(-1)
    logits = logits.reshape(-1, V)
    targets = targets.reshape(-1)
    m, _ = logits.max(dim=-1, keepdim=True)
    log_probs = logits - (m + (logits - m).exp().sum(-1, keepdim=True).log())
    keep = targets != ignore_index
    nll = -log_probs[keep].gather(1, targets[keep][:, None]).squeeze(1)
    if label_smoothing > 0:
        nll = (1 - label_smoothing) * nll - label_smoothing * log_probs[keep].mean(-1)
    return nll.sum()
