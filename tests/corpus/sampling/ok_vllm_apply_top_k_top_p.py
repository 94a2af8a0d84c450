# attnprep: sampling
# expect: passed
"""vLLM's _apply_top_k_top_p: one ascending sort for both filters, per-row k and p as tensors, the
sorted logits scattered back to vocabulary order."""
from typing import Optional

import torch


def _apply_top_k_top_p(
    logits: torch.Tensor,
    p: Optional[torch.Tensor],
    k: Optional[torch.Tensor],
) -> torch.Tensor:
    logits_sort, logits_idx = logits.sort(dim=-1, descending=False)

    if k is not None:
        # Apply top-k.
        top_k_mask = logits_sort.size(1) - k.to(torch.long)  # shape: B
        # Get all the top_k values.
        top_k_mask = logits_sort.gather(1, top_k_mask.unsqueeze(dim=1))
        top_k_mask = logits_sort < top_k_mask
        logits_sort.masked_fill_(top_k_mask, -float("inf"))

    if p is not None:
        # Apply top-p.
        probs_sort = logits_sort.softmax(dim=-1)
        probs_sum = torch.cumsum(probs_sort, dim=-1, out=probs_sort)
        top_p_mask = probs_sum <= 1 - p.unsqueeze(dim=1)
        # at least one
        top_p_mask[:, -1] = False
        logits_sort.masked_fill_(top_p_mask, -float("inf"))

    # Re-sort the probabilities.
    logits = logits_sort.scatter(dim=-1, index=logits_idx, src=logits_sort)
    return logits


def sampling_probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    batch_size = logits.shape[0]
    logits = logits.div(temperature)
    k = torch.full((batch_size,), top_k, device=logits.device) if top_k > 0 else None
    p = torch.full((batch_size,), top_p, device=logits.device) if top_p < 1.0 else None
    if k is not None or p is not None:
        logits = _apply_top_k_top_p(logits, p, k)
    return torch.softmax(logits, dim=-1, dtype=torch.float)
