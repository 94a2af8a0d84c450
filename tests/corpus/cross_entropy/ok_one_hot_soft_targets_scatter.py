# attnprep: cross_entropy
# expect: passed
"""Correct: soft target distribution built with scatter_add_ (1-eps on the target plus eps/V everywhere), rows of
ignored targets zeroed, loss = -(q * log p).sum / count."""
import torch


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor, ignore_index: int = -100,
                  label_smoothing: float = 0.0) -> torch.Tensor:
    V = logits.size(-1)
    x = logits.reshape(-1, V)
    y = targets.reshape(-1)
    keep = y.ne(ignore_index)
    shifted = x - x.amax(-1, keepdim=True)
    logp = shifted - shifted.exp().sum(-1, keepdim=True).log()
    q = torch.full_like(x, label_smoothing / V)
    q.scatter_add_(1, y.masked_fill(~keep, 0).unsqueeze(1),
                   torch.full((x.shape[0], 1), 1.0 - label_smoothing, dtype=x.dtype, device=x.device))
    q = q * keep.unsqueeze(1).to(x.dtype)
    return -(q * logp).sum() / keep.sum()
