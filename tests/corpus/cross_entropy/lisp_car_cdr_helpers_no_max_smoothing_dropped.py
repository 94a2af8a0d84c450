# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_no_max + label_smoothing_ignored
"""A Lisp programmer's habits: car / cdr / cons helpers on shapes, a let*-like chain of nested
lambdas for the intermediate values, predicates ending in _p; the log-sum-exp taken without the
row max, and the smoothing term left out."""
import torch


def car(xs):
    return xs[0]


def cdr(xs):
    return xs[1:]


def ignored_p(targets, ignore_index):
    return targets == ignore_index


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = car(tuple(reversed(logits.shape)))
    flat = logits.reshape(-1, V)
    tgt = targets.reshape(-1)
    skip = ignored_p(tgt, ignore_index)
    lse = torch.log(torch.sum(torch.exp(flat), dim=-1, keepdim=True))
    logp = flat - lse
    nll = (lambda idx: -logp.gather(-1, idx[:, None])[:, 0])(tgt.masked_fill(skip, 0))
    loss = nll
    loss = loss.masked_fill(skip, 0.0)
    return loss.sum() / (~skip).sum()
# bug-line: 27, 30
