# attnprep: cross_entropy
# expect: error
# diagnosis: tensor_without_device
"""The smoothed target distribution made with torch.zeros(N, V): on the CPU whatever the logits' device."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.size(-1)
    x = logits.reshape(-1, V)
    y = targets.reshape(-1)
    N = x.size(0)
    keep = y != ignore_index
    m = x.amax(-1, keepdim=True)
    logp = x - m - (x - m).exp().sum(-1, keepdim=True).log()
    target = torch.zeros(N, V)
    target[torch.arange(N), y.clamp(min=0)] = 1.0
    target = target * (1 - label_smoothing) + label_smoothing / V
    loss = -(target * logp).sum(-1)
    return loss[keep].sum() / keep.sum()
