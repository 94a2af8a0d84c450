# attnprep: sampling
# expect: wrong_output
# diagnosis: temperature_multiplied
"""vLLM's Sampler, one step: _apply_temperature, then apply_top_k_top_p by sorting once (ascending, as vLLM does)."""
import torch


def _apply_temperature(logits: torch.Tensor, temperatures: torch.Tensor) -> torch.Tensor:
    return logits.mul_(temperatures.unsqueeze(dim=1))


def top_k_mask(logits, top_k):
    logits_sort, _ = logits.sort(dim=-1, descending=False)
    top_k_idx = logits_sort.size(1) - top_k
    kth = logits_sort.gather(1, torch.full((logits.size(0), 1), top_k_idx, device=logits.device))
    return logits >= kth


def top_p_mask(logits, top_p):
    logits_sort, logits_idx = logits.sort(dim=-1, descending=False)
    probs_sort = logits_sort.softmax(dim=-1)
    probs_sum = probs_sort.cumsum(dim=-1)
    top_p_remove = probs_sum <= 1 - top_p
    top_p_remove[:, -1] = False  # at least one
    keep_sorted = ~top_p_remove
    return torch.empty_like(keep_sorted).scatter_(dim=-1, index=logits_idx, src=keep_sorted)


def sampling_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    logits = logits.clone()
    temperatures = torch.full((logits.size(0),), temperature, device=logits.device)
    logits = _apply_temperature(logits, temperatures)
    keep = torch.ones_like(logits, dtype=torch.bool)
    if top_k > 0:
        keep &= top_k_mask(logits, top_k)
    if top_p < 1.0:
        keep &= top_p_mask(logits.masked_fill(~keep, float("-inf")), top_p)
    return logits.masked_fill(~keep, float("-inf")).softmax(dim=-1)
# bug-line: 9
