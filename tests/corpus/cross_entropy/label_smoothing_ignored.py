# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: label_smoothing_ignored
"""label_smoothing accepted and never used."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.size(-1)
    x, y = logits.reshape(-1, V), targets.reshape(-1)
    m = x.amax(-1, keepdim=True)
    logp = x - m - (x - m).exp().sum(-1, keepdim=True).log()
    keep = y != ignore_index
    nll = -logp[torch.arange(y.numel(), device=y.device), y.masked_fill(~keep, 0)]
    return nll[keep].mean()
