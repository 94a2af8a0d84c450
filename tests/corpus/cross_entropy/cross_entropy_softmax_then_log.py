# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_softmax_then_log
"""torch.log(F.softmax(...)): the softmax is stable, but a tiny probability is 0 and log(0) = -inf."""
import torch
import torch.nn.functional as F


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.size(-1)
    probs = F.softmax(logits.reshape(-1, V), dim=-1)
    log_probs = torch.log(probs)
    targets = targets.reshape(-1)
    keep = targets != ignore_index
    nll = -log_probs[torch.arange(targets.numel(), device=targets.device), targets.clamp(min=0)]
    if label_smoothing > 0:
        nll = (1 - label_smoothing) * nll + label_smoothing * (-log_probs.mean(-1))
    return nll[keep].mean()
