# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_softmax_then_log + cross_entropy_mean_includes_ignored
"""Two mistakes: log of the (stable) softmax, and the masked losses averaged over all N."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.size(-1)
    x = logits.reshape(-1, V)
    p = torch.softmax(x, dim=-1)
    t = targets.reshape(-1)
    keep = (t != ignore_index)
    nll = -torch.log(p[torch.arange(len(t)), t.clamp(min=0)])
    if label_smoothing > 0:
        nll = (1 - label_smoothing) * nll - label_smoothing * torch.log(p).mean(-1)
    return (nll * keep).mean()
