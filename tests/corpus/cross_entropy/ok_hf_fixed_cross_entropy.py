# attnprep: cross_entropy
# expect: passed
"""Hugging Face style: a fixed_cross_entropy helper with reduction="sum" and the division by the
number of items in the batch done by the caller."""
from typing import Optional

import torch
from torch import nn


def _log_softmax(hidden_states: torch.Tensor) -> torch.Tensor:
    hidden_states = hidden_states - hidden_states.amax(dim=-1, keepdim=True)
    return hidden_states - hidden_states.exp().sum(dim=-1, keepdim=True).log()


def fixed_cross_entropy(
    source: torch.Tensor,
    target: torch.Tensor,
    num_items_in_batch: Optional[int] = None,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
) -> torch.Tensor:
    log_probs = _log_softmax(source)
    mask = target.ne(ignore_index)
    picked = log_probs.gather(dim=-1, index=target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    per_token = -picked
    if label_smoothing:
        per_token = per_token * (1.0 - label_smoothing) + label_smoothing * (-log_probs.mean(dim=-1))
    loss = (per_token * mask).sum()
    if num_items_in_batch is None:
        num_items_in_batch = mask.sum()
    return loss / num_items_in_batch


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor, ignore_index: int = -100,
                  label_smoothing: float = 0.0) -> torch.Tensor:
    vocab_size = logits.shape[-1]
    logits = logits.reshape(-1, vocab_size)
    targets = targets.reshape(-1).to(logits.device)
    return fixed_cross_entropy(logits, targets, ignore_index=ignore_index, label_smoothing=label_smoothing)
