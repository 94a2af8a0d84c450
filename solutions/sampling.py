"""The distribution a sampler draws the next token from: temperature, then top-k, then top-p
(nucleus), renormalised, as Hugging Face's generate chains its logits warpers.

Temperature divides the logits: T < 1 sharpens the distribution (T -> 0 is greedy), T > 1 flattens
it. Top-k keeps the k largest logits. Top-p keeps the smallest set of the most probable tokens whose
probability reaches p: sort descending, and keep each token whose more probable predecessors sum to
less than p, so the token that crosses p is kept and the most probable token always is. Removed
tokens get the logit -inf, so one softmax at the end renormalises over the kept ones and gives the
others exactly 0.
"""

import torch


def top_k_mask(logits: torch.Tensor, top_k: int) -> torch.Tensor:
    """(B, V) bool: True at the top_k largest logits of each row."""
    kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]  # (B, 1): the k-th largest logit of each row
    return logits >= kth  # (B, V)


def top_p_mask(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """(B, V) bool: True at the smallest set of the most probable tokens whose probability reaches top_p."""
    probs = torch.softmax(logits, dim=-1)  # (B, V); tokens already removed (-inf) have 0
    sorted_probs, order = torch.sort(probs, dim=-1, descending=True)  # (B, V): most probable first
    before = sorted_probs.cumsum(dim=-1) - sorted_probs  # (B, V): the mass of the tokens ranked above
    keep_sorted = before < top_p  # the prefix that reaches top_p: the crossing token is kept, the first always
    return torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)  # (B, V): back in vocabulary order


def sampling_probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int = 0,
                   top_p: float = 1.0) -> torch.Tensor:
    """Probabilities (B, V) after temperature, top-k (0: off) and top-p (1.0: off), renormalised."""
    logits = logits / temperature  # (B, V): T < 1 sharpens, T > 1 flattens
    keep = torch.ones_like(logits, dtype=torch.bool)  # (B, V): the tokens still allowed
    if top_k > 0:
        keep = keep & top_k_mask(logits, top_k)
    if top_p < 1.0:
        keep = keep & top_p_mask(logits.masked_fill(~keep, float("-inf")), top_p)  # top-p within the top-k
    return torch.softmax(logits.masked_fill(~keep, float("-inf")), dim=-1)  # (B, V): renormalised, removed tokens exactly 0
