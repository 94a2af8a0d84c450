# attnprep: cross_entropy
# expect: passed
"""Chunked over rows as a memory-saving loss does (Liger-like): each chunk's log-normaliser by max +
log(sum(exp)), nll by gather, the smoothing term as the mean of -log p; summed, then divided by the
count of real targets: correct."""

import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0, chunk=5):
    V = logits.size(-1)
    flat, tgt = logits.reshape(-1, V), targets.reshape(-1)
    total = logits.new_zeros((), dtype=torch.float32)
    count = (tgt != ignore_index).sum()
    for s in range(0, flat.size(0), chunk):
        z, t = flat[s:s + chunk].float(), tgt[s:s + chunk]
        keep = t != ignore_index
        m = z.max(dim=-1, keepdim=True).values
        lse = m + (z - m).exp().sum(-1, keepdim=True).log()
        logp = z - lse
        nll = -logp.gather(-1, t.clamp(min=0)[:, None]).squeeze(-1)
        smooth = -logp.mean(-1)
        loss = (1 - label_smoothing) * nll + label_smoothing * smooth
        total = total + torch.where(keep, loss, torch.zeros_like(loss)).sum()
    return (total / count).to(logits.dtype)
