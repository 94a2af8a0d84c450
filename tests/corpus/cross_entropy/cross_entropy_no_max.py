# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_no_max
"""logsumexp as log(sum(exp(x))): exp overflows to inf on large logits."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.size(-1)
    logits = logits.view(-1, V)
    targets = targets.view(-1)
    lse = torch.log(torch.exp(logits).sum(dim=-1))
    keep = targets != ignore_index
    picked = logits.gather(1, targets.clamp(min=0)[:, None]).squeeze(1)
    loss = lse - picked
    if label_smoothing > 0:
        loss = (1 - label_smoothing) * loss + label_smoothing * (lse - logits.mean(dim=-1))
    return loss[keep].sum() / keep.sum()
