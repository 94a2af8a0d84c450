# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: ignore_index_hardcoded
"""-100 written where the ignore_index argument belongs."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.size(-1)
    logits, targets = logits.reshape(-1, V), targets.reshape(-1)
    m = logits.amax(-1, keepdim=True)
    logp = logits - m - torch.log(torch.exp(logits - m).sum(-1, keepdim=True))
    mask = targets != -100
    nll = -logp.gather(-1, targets.clamp(min=0)[:, None])[:, 0]
    if label_smoothing > 0:
        nll = (1 - label_smoothing) * nll - label_smoothing * logp.mean(-1)
    return (nll * mask).sum() / mask.sum()
# bug-line: 13
