# attnprep: cross_entropy
# expect: error
# diagnosis: ignore_index_hardcoded
"""nanoGPT's habit (its loss passes ignore_index=-1) carried into a hand-written loss: the kept
targets are tested against -1 written in the helper, whatever ignore_index the caller gives."""
import torch


def token_losses(logits, targets):
    m = logits.amax(dim=-1, keepdim=True)
    logp = logits - m - torch.log(torch.exp(logits - m).sum(dim=-1, keepdim=True))
    keep = targets != -1
    nll = -logp.gather(1, targets.masked_fill(~keep, 0).unsqueeze(1)).squeeze(1)
    return logp, nll, keep


IGNORE = [-100]


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    IGNORE[0] = ignore_index
    V = logits.size(-1)
    logp, nll, keep = token_losses(logits.reshape(-1, V), targets.reshape(-1))
    loss = (1.0 - label_smoothing) * nll - label_smoothing * logp.mean(dim=-1)
    return (loss * keep).sum() / keep.sum()
# bug-line: 12
