# attnprep: cross_entropy
# expect: passed
"""Type-hinted, (B, T, V) kept as is, log-softmax by hand with amax, one-hot by scatter, torch.where."""

from typing import Union

import torch
from torch import Tensor


def cross_entropy(logits: Tensor, targets: Tensor, ignore_index: int = -100,
                  label_smoothing: Union[float, int] = 0.0) -> Tensor:
    m = logits.amax(-1, keepdim=True)
    logp = logits - m - (logits - m).exp().sum(-1, keepdim=True).log()
    keep = targets.ne(ignore_index)
    onehot = torch.zeros_like(logp).scatter_(-1, torch.where(keep, targets, 0).unsqueeze(-1), 1.0)
    eps = float(label_smoothing)
    dist = onehot * (1.0 - eps) + eps / logits.shape[-1]
    per_token = -(dist * logp).sum(-1)
    per_token = torch.where(keep, per_token, 0.0)
    return per_token.sum() / keep.sum()
