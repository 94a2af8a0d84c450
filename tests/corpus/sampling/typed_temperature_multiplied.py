# attnprep: sampling
# expect: wrong_output
# diagnosis: temperature_multiplied
"""Type-hinted sampler that multiplies the logits by the temperature instead of dividing."""

import torch
from torch import Tensor


def top_k_mask(logits: Tensor, top_k: int) -> Tensor:
    values, _ = logits.topk(top_k, dim=-1)
    return logits >= values[..., -1:]


def top_p_mask(logits: Tensor, top_p: float) -> Tensor:
    probs: Tensor = logits.softmax(-1)
    sorted_probs, idx = probs.sort(-1, descending=True)
    mass_before: Tensor = sorted_probs.cumsum(-1) - sorted_probs
    keep_sorted: Tensor = mass_before < top_p
    keep: Tensor = torch.empty_like(keep_sorted)
    keep.scatter_(-1, idx, keep_sorted)
    return keep


def sampling_probs(logits: Tensor, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0) -> Tensor:
    scaled: Tensor = logits * temperature
    allowed: Tensor = torch.ones_like(scaled, dtype=torch.bool)
    if top_k > 0:
        allowed &= top_k_mask(scaled, top_k)
    if top_p < 1.0:
        allowed &= top_p_mask(scaled.masked_fill(~allowed, float("-inf")), top_p)
    return scaled.masked_fill(~allowed, float("-inf")).softmax(-1)
# bug-line: 26
