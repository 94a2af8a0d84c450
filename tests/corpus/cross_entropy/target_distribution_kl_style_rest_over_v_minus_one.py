# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: label_smoothing_over_v_minus_1
"""The loss as a cross-entropy between two distributions (the KL-divergence habit of distillation
code): a smoothed target distribution built with scatter, then -sum(target * log_probs); the
log-softmax stable by the row max; ignored rows dropped with boolean indexing."""
import torch


def log_softmax_rows(z):
    z = z - z.amax(-1, keepdim=True)
    return z - z.exp().sum(-1, keepdim=True).log()


def smoothed_targets(targets, V, eps, dtype):
    off = eps / (V - 1)
    dist = torch.full((targets.shape[0], V), off, dtype=dtype, device=targets.device)
    return dist.scatter(1, targets[:, None], 1.0 - eps)


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    z = logits.reshape(-1, V)
    t = targets.reshape(-1)
    keep = t != ignore_index
    z, t = z[keep], t[keep]
    q = smoothed_targets(t, V, label_smoothing, z.dtype)
    return -(q * log_softmax_rows(z)).sum(-1).mean()
# bug-line: 16, 18
