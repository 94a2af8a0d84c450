# attnprep: cross_entropy
# expect: wrong_output
"""The nll honours ignore_index, but the smoothing term keeps PyTorch's default and drops only the
-100 rows: right whenever ignore_index is -100 or no smoothing is asked, wrong with nanoGPT's -1."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    V = logits.shape[-1]
    logits = logits.reshape(-1, V).float()
    targets = targets.reshape(-1)
    m = logits.max(dim=-1, keepdim=True).values
    logp = logits - m - (logits - m).exp().sum(-1, keepdim=True).log()
    keep = targets != ignore_index
    nll = -logp[keep].gather(1, targets[keep][:, None]).squeeze(1)
    smooth_rows = targets != -100
    smooth = -logp[smooth_rows].mean(-1)
    loss = (1 - label_smoothing) * nll.sum() / keep.sum() + label_smoothing * smooth.sum() / smooth_rows.sum()
    return loss.to(logits.dtype)
# bug-line: 16
