# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: ignore_index_hardcoded
"""Protocol-buffer habits: the loss's settings are a message class with field numbers and proto3
defaults, built with keyword fields and read through getters; the message was built from the
smoothing argument only, so its ignore_index is the proto default -100 whatever the caller asked."""
from dataclasses import dataclass

import torch


@dataclass
class LossOptions:
    # message LossOptions { int64 ignore_index = 1; float label_smoothing = 2; }
    ignore_index: int = -100
    label_smoothing: float = 0.0

    def get_ignore_index(self):
        return self.ignore_index

    def get_label_smoothing(self):
        return self.label_smoothing


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    opts = LossOptions(label_smoothing=label_smoothing)
    V = logits.shape[-1]
    flat = logits.reshape(-1, V).float()
    t = targets.reshape(-1)
    valid = t != opts.get_ignore_index()
    shifted = flat - flat.amax(dim=-1, keepdim=True)
    logp = shifted - shifted.exp().sum(dim=-1, keepdim=True).log()
    picked = logp.gather(1, t.clamp(0, V - 1)[:, None])[:, 0]
    eps = opts.get_label_smoothing()
    loss = -(1 - eps) * picked - eps * logp.mean(dim=-1)
    loss = loss * valid
    return (loss.sum() / valid.sum()).to(logits.dtype)
# bug-line: 26
