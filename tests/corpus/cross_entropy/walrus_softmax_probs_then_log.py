# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_softmax_then_log
"""Walrus-heavy one-pass style: `(probs := softmax(...))`, `(keep := targets != ignore_index)` inline in
the expressions, a stable softmax by hand (max subtracted). The loss then takes log(probs): a
probability that underflows to 0 in float32 gives -log(0) = inf."""

import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    x, t = logits.reshape(-1, V := logits.shape[-1]), targets.reshape(-1)
    e = torch.exp(x - x.amax(-1, keepdim=True))
    logp = torch.log(probs := e / e.sum(-1, keepdim=True))
    nll = -logp.gather(-1, t.masked_fill(~(keep := t != ignore_index), 0)[:, None]).squeeze(-1)
    loss = (1 - label_smoothing) * nll + label_smoothing * -logp.mean(-1)
    return (loss * keep).sum() / keep.sum()
# bug-line: 14
