# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_mean_includes_ignored + cross_entropy_no_max
"""fairseq2 / OLMo-like loss helpers: a `Reduction` enum with a `reduce(loss, keep)` method per
member, an `nll_loss(lprobs, target, ...)` helper separate from the log-softmax, smoothing added as
OLMo's z-loss-free `smooth_loss` term."""
import enum

import torch


class Reduction(enum.Enum):
    SUM = "sum"
    MEAN = "mean"

    def reduce(self, loss, keep):
        if self is Reduction.SUM:
            return loss.sum()
        return loss.sum() / loss.numel()


def log_softmax(x):
    return x - torch.log(torch.exp(x).sum(dim=-1, keepdim=True))


def nll_loss(lprobs, target, ignore_index, epsilon):
    keep = target != ignore_index
    safe = torch.where(keep, target, torch.zeros_like(target))
    nll = -lprobs.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    smooth = -lprobs.mean(-1)
    loss = (1.0 - epsilon) * nll + epsilon * smooth
    return torch.where(keep, loss, torch.zeros_like(loss)), keep


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0, reduction=Reduction.MEAN):
    V = logits.size(-1)
    lprobs = log_softmax(logits.reshape(-1, V))
    loss, keep = nll_loss(lprobs, targets.reshape(-1), ignore_index, label_smoothing)
    return reduction.reduce(loss, keep)
# bug-line: 19, 23
