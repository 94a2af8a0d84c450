# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: label_smoothing_over_v_minus_1
"""A class of staticmethods as a namespace (CE.stable_log_softmax, CE.nll, CE.smooth, CE.reduce),
called from a thin module-level function. The smoothing spreads eps over the V - 1 classes other than
the target, as some papers write it; torch spreads it uniformly over all V."""

import torch


class CE:
    @staticmethod
    def stable_log_softmax(z):
        z = z - z.amax(dim=-1, keepdim=True)
        return z - z.exp().sum(dim=-1, keepdim=True).log()

    @staticmethod
    def nll(logp, t):
        return -logp.gather(-1, t[:, None])[:, 0]

    @staticmethod
    def smooth(logp, t, nll, eps):
        V = logp.shape[-1]
        return (1 - eps) * nll + eps / (V - 1) * (-logp.sum(dim=-1) - nll)

    @staticmethod
    def reduce(loss, keep):
        return (loss * keep).sum() / keep.sum()


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    logp = CE.stable_log_softmax(logits.flatten(0, -2))  # (N, V)
    t = targets.flatten()
    keep = t != ignore_index
    t = t.clamp_min(0) * keep
    loss = CE.nll(logp, t)
    if label_smoothing:
        loss = CE.smooth(logp, t, loss, label_smoothing)
    return CE.reduce(loss, keep)
# bug-line: 24
