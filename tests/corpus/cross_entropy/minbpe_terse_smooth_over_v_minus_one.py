# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: label_smoothing_over_v_minus_1
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    # terse: flatten, log-softmax by logsumexp, pick, smooth, mean over kept
    V = logits.shape[-1]
    x, y = logits.reshape(-1, V), targets.reshape(-1)
    mx = x.amax(-1, keepdim=True)
    lp = x - mx - (x - mx).exp().sum(-1, keepdim=True).log()
    m = y != ignore_index
    nll = -lp.gather(1, y.clamp(min=0)[:, None])[:, 0]
    if label_smoothing:
        eps = label_smoothing
        rest = (-lp.sum(-1) - nll) / (V - 1)  # the other V - 1 classes share eps
        nll = (1 - eps) * nll + eps * rest
    return (nll * m).sum() / m.sum()
# bug-line: 17
