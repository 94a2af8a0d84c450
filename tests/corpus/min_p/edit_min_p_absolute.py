# attnprep: min_p
# expect: wrong_output
# diagnosis: min_p_absolute
"""Written by `attnprep dev corpus min_p`: the reference with the edit of min_p_absolute."""
"""Min-p sampling (Nguyen et al., 2024; Hugging Face's MinPLogitsWarper): keep the tokens whose
probability is at least min_p times the most probable token's, after temperature, renormalised.
"""

import torch


def min_p_probs(logits: torch.Tensor, min_p: float = 0.1, temperature: float = 1.0) -> torch.Tensor:
    """Probabilities (B, V): softmax(logits / T), tokens below min_p · max removed, renormalised."""
    logits = logits / temperature  # (B, V)
    probs = torch.softmax(logits, dim=-1)  # (B, V)
    threshold = min_p  # (B, 1): scaled by the top token's probability
    keep = probs >= threshold  # (B, V): the top token always passes
    return torch.softmax(logits.masked_fill(~keep, float("-inf")), dim=-1)  # (B, V): renormalised, removed exactly 0
