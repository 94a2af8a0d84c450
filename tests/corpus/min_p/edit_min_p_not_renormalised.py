# attnprep: min_p
# expect: wrong_output
# diagnosis: min_p_not_renormalised
"""Written by `attnprep dev corpus min_p`: the reference with the edit of min_p_not_renormalised."""
"""Min-p sampling (Nguyen et al., 2024; Hugging Face's MinPLogitsWarper): keep the tokens whose
probability is at least min_p times the most probable token's, after temperature, renormalised.
"""

import torch


def min_p_probs(logits: torch.Tensor, min_p: float = 0.1, temperature: float = 1.0) -> torch.Tensor:
    """Probabilities (B, V): softmax(logits / T), tokens below min_p · max removed, renormalised."""
    logits = logits / temperature  # (B, V)
    probs = torch.softmax(logits, dim=-1)  # (B, V)
    threshold = min_p * probs.amax(dim=-1, keepdim=True)  # (B, 1): scaled by the top token's probability
    keep = probs >= threshold  # (B, V): the top token always passes
    return probs.masked_fill(~keep, 0.0)  # (B, V): renormalised, removed exactly 0
