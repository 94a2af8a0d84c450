# attnprep: causal
# expect: mask_leak
# diagnosis: mask_after_softmax + scale_by_dim
"""Nepali comments; the scores divided by the head width itself, and both masks written into the
probabilities after the softmax (zeros where a key may not be seen, no renormalisation)."""
import torch


def causal_mask(seq_len, device=None):
    # तल्लो त्रिकोण: j <= i
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    # अङ्क: प्रश्न र कुञ्जीको गुणनफल
    scores = q @ k.transpose(-1, -2) / D
    allowed = causal_mask(T, q.device)[None, None]
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    # सम्भावना, त्यसपछि मास्क
    weights = torch.softmax(scores, dim=-1).masked_fill(~allowed, 0.0)
    return weights @ v
# bug-line: 17, 22
