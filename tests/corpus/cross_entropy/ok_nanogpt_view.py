# attnprep: cross_entropy
# expect: passed
"""nanoGPT's view(-1, V), a log-sum-exp written by hand and gather."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    B_T, V = -1, logits.size(-1)
    logits = logits.view(B_T, V)
    targets = targets.view(-1)
    mx = logits.max(dim=-1, keepdim=True).values
    lse = mx + (logits - mx).exp().sum(-1, keepdim=True).log()
    logp = logits - lse
    valid = targets != ignore_index
    idx = torch.where(valid, targets, torch.zeros_like(targets))
    nll = -logp.gather(1, idx.unsqueeze(1)).squeeze(1)
    if label_smoothing > 0:
        nll = (1 - label_smoothing) * nll - label_smoothing * logp.mean(-1)
    nll = torch.where(valid, nll, torch.zeros_like(nll))
    return nll.sum() / valid.sum()
