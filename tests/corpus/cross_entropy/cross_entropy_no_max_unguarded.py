# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_no_max
"""No max subtracted, and the smoothing term always computed: with eps = 0, 0 * inf is NaN."""
import torch


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor, ignore_index: int = -100,
                  label_smoothing: float = 0.0) -> torch.Tensor:
    V = logits.shape[-1]
    log_probs = logits.reshape(-1, V) - logits.reshape(-1, V).exp().sum(-1, keepdim=True).log()
    targets = targets.reshape(-1)
    mask = (targets != ignore_index).to(log_probs.dtype)
    nll = -log_probs.gather(-1, (targets * (targets != ignore_index)).unsqueeze(-1)).squeeze(-1)
    smooth = -log_probs.mean(-1)
    loss = (1 - label_smoothing) * nll + label_smoothing * smooth
    return torch.where(mask.bool(), loss, torch.zeros_like(loss)).sum() / mask.sum()
# bug-line: 11
