# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_softmax_then_log + cross_entropy_sum_not_mean
"""Written numpy-first (np.exp / np.log / fancy indexing in mind, torch spelled the same way):
probabilities first, then their log, and the per-token losses summed."""
import torch as np  # the numpy habit: every call below reads as numpy's


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    z = logits.reshape(-1, V)
    y = targets.reshape(-1)
    z = z - z.max(axis=-1, keepdim=True).values
    e = np.exp(z)
    p = e / e.sum(axis=-1, keepdim=True)
    logp = np.log(p)
    valid = y != ignore_index
    yy = np.where(valid, y, np.zeros_like(y))
    nll = -logp[np.arange(z.shape[0]), yy]
    if label_smoothing > 0:
        nll = (1 - label_smoothing) * nll - label_smoothing * logp.mean(axis=-1)
    nll = np.where(valid, nll, np.zeros_like(nll))
    return nll.sum()
# bug-line: 16, 23
