# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_mean_includes_ignored
"""Ignored targets zeroed, then .mean() over all of them: the count includes the ignored ones."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.size(-1)
    x = logits.reshape(-1, V)
    t = targets.reshape(-1)
    m = x.amax(-1, keepdim=True)
    logp = x - m - torch.log(torch.exp(x - m).sum(-1, keepdim=True))
    valid = (t != ignore_index).float()
    nll = -logp.gather(1, (t * valid.long()).unsqueeze(1)).squeeze(1)
    if label_smoothing > 0:
        nll = (1 - label_smoothing) * nll - label_smoothing * logp.mean(-1)
    return (nll * valid).mean()
# bug-line: 18
