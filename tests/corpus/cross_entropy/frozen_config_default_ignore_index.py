# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: ignore_index_hardcoded
"""A frozen LossConfig dataclass built from the call's arguments and handed to small pure helpers;
float32 log-softmax with the max, ignored rows dropped by a multiplicative weight."""
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class LossConfig:
    ignore_index: int = -100
    label_smoothing: float = 0.0


def _log_softmax(x):
    m = x.amax(-1, keepdim=True)
    z = x - m
    return z - z.exp().sum(-1, keepdim=True).log()


def _per_token(logp, t, cfg):
    safe = t.clamp_min(0)
    nll = -logp.gather(-1, safe[:, None])[:, 0]
    return (1 - cfg.label_smoothing) * nll - cfg.label_smoothing * logp.mean(-1)


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    cfg = LossConfig(label_smoothing=label_smoothing)
    V = logits.shape[-1]
    logp = _log_softmax(logits.reshape(-1, V).float())
    t = targets.reshape(-1)
    w = (t != cfg.ignore_index).float()
    loss = (_per_token(logp, t, cfg) * w).sum() / w.sum()
    return loss.to(logits.dtype)
# bug-line: 30
