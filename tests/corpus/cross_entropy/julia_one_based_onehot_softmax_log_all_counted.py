# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_softmax_then_log + cross_entropy_mean_includes_ignored
"""A Julia programmer's loss (Flux.logitcrossentropy read aloud): classes thought of as 1..V and
shifted back at the gather, the samples flattened column by column into a (V, N) matrix, softmax
along dims=1, `mean` of the per-sample losses."""
import torch


def softmax_dims1(z):  # softmax over the class axis (dims=1 of a (V, N) matrix)
    z = z - z.max(dim=0, keepdim=True).values
    e = torch.exp(z)
    return e / e.sum(dim=0, keepdim=True)


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    Z = logits.reshape(-1, V).float().T                   # (V, N), column j = sample j
    y = targets.reshape(-1) + 1                           # classes 1..V
    keep = y != ignore_index + 1
    logp = torch.log(softmax_dims1(Z))
    N = Z.shape[1]
    idx = torch.where(keep, y, torch.ones_like(y)) - 1    # back to 0-based for the gather
    nll = -logp[idx, torch.arange(N, device=logits.device)]
    smooth = -logp.mean(dim=0)
    per_sample = (1 - label_smoothing) * nll + label_smoothing * smooth
    per_sample = per_sample * keep
    return (per_sample.sum() / N).to(logits.dtype)
# bug-line: 21, 28
