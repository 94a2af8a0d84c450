# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: ignore_index_hardcoded
"""torchtune-style chunk-free loss that tests for the literal -100 instead of the ignore_index argument."""

import torch


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor, ignore_index: int = -100,
                  label_smoothing: float = 0.0) -> torch.Tensor:
    logits = logits.float().reshape(-1, logits.shape[-1])
    labels = targets.reshape(-1)
    shift = logits.max(dim=-1, keepdim=True).values
    log_z = shift + (logits - shift).exp().sum(dim=-1, keepdim=True).log()
    logp = logits - log_z
    valid = labels != -100
    picked = logp.gather(1, labels.clamp(min=0).unsqueeze(1)).squeeze(1)
    nll = -picked
    if label_smoothing > 0:
        nll = (1 - label_smoothing) * nll - label_smoothing * logp.mean(dim=-1)
    nll = torch.where(valid, nll, torch.zeros_like(nll))
    return nll.sum() / valid.sum()
# bug-line: 16
