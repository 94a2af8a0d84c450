# attnprep: cross_entropy
# expect: used_builtin
# diagnosis: used_builtin
"""torch.logsumexp, the stable part done for you."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.size(-1)
    x, y = logits.reshape(-1, V), targets.reshape(-1)
    logp = x - torch.logsumexp(x, dim=-1, keepdim=True)
    keep = y != ignore_index
    nll = -logp.gather(1, y.clamp(min=0)[:, None]).squeeze(1)
    nll = (1 - label_smoothing) * nll - label_smoothing * logp.mean(-1)
    return nll[keep].mean()
