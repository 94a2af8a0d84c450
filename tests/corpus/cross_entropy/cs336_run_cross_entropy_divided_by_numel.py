# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_mean_includes_ignored
"""Stanford CS336's run_cross_entropy habits: `inputs: Float[Tensor, " batch_size vocab_size"]` shape
strings, the batch-like dims flattened first, the log-sum-exp by hand with the max subtracted
("cancel out log and exp whenever possible"), `torch.gather` for the target logit, the smoothing
term as the mean of -log p over the vocabulary. Ignored targets are zeroed in the sum, but the
mean divides by every target, ignored ones included: right when nothing is ignored."""

from __future__ import annotations

import torch
from torch import Tensor


def run_log_softmax(inputs: "Float[Tensor, ' batch_size vocab_size']") -> "Float[Tensor, ' batch_size vocab_size']":
    m = inputs.max(dim=-1, keepdim=True).values
    shifted = inputs - m
    return shifted - shifted.exp().sum(dim=-1, keepdim=True).log()


def cross_entropy(logits: "Float[Tensor, ' ... vocab_size']", targets: "Int[Tensor, ' ...']",
                  ignore_index: int = -100, label_smoothing: float = 0.0) -> "Float[Tensor, '']":
    inputs = logits.reshape(-1, logits.shape[-1]).float()
    t = targets.reshape(-1)
    keep = t != ignore_index
    logp = run_log_softmax(inputs)
    nll = -logp.gather(-1, t.clamp(min=0)[:, None])[:, 0]
    smooth = -logp.mean(dim=-1)
    per_token = (1.0 - label_smoothing) * nll + label_smoothing * smooth
    per_token = torch.where(keep, per_token, torch.zeros_like(per_token))
    return (per_token.sum() / t.numel()).to(logits.dtype)
# bug-line: 32
