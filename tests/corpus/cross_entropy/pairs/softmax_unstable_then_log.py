# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_no_max + cross_entropy_softmax_then_log
"""The textbook way, two mistakes at once: probs = exp(x) / sum(exp(x)) (no max), then the log of
the probabilities."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.size(-1)
    e = torch.exp(logits.reshape(-1, V))
    probs = e / e.sum(-1, keepdim=True)
    t = targets.reshape(-1)
    keep = t != ignore_index
    nll = -torch.log(probs.gather(1, torch.where(keep, t, 0)[:, None]).squeeze(1))
    if label_smoothing > 0:
        nll = (1 - label_smoothing) * nll - label_smoothing * torch.log(probs).mean(-1)
    return torch.where(keep, nll, 0.0).sum() / keep.sum()
