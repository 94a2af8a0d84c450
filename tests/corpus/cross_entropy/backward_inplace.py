# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: backward_inplace
"""The exponentials turned into probabilities in place (e.div_(s)) after their sum was taken: exp
saved its output for the backward pass, so loss.backward() raises (the forward values are right)."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.size(-1)
    x, t = logits.reshape(-1, V), targets.reshape(-1)
    z = x - x.amax(-1, keepdim=True)
    e = z.exp()
    s = e.sum(-1, keepdim=True)
    probs = e.div_(s)  # softmax, reused for the smoothing term
    logp = z - s.log()
    keep = t != ignore_index
    nll = -logp.gather(1, t.clamp(min=0)[:, None]).squeeze(1)
    if label_smoothing > 0:
        nll = (1 - label_smoothing) * nll - label_smoothing * logp.mean(-1) + 0.0 * probs.sum(-1)
    return nll[keep].mean()
