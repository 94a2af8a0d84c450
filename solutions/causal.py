"""Causal (autoregressive) scaled dot-product attention, as two plain functions.

causal_mask builds the lower-triangular bool mask, True where query i may attend key j (j <= i).
causal_attention applies it, together with an optional key padding mask, to the scores
q·kᵀ / sqrt(D) before the softmax, so no token ever sees the future or a padding token.
"""

import math

import torch
import torch.nn.functional as F


def causal_mask(seq_len: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Bool (seq_len, seq_len): True where attention is allowed, i.e. key j <= query i."""
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))  # (T, T)


def causal_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attention_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """softmax(q·kᵀ / sqrt(D) + causal and padding masks)·v for q, k, v of shape (B, H, T, D).

    attention_mask: optional bool (B, T), True = real token; padded keys get zero attention.
    """
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, D) @ (B, H, D, T) -> (B, H, T, T)
    allowed = causal_mask(T, device=q.device)  # (T, T)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]  # (T, T) & (B, 1, 1, T) -> (B, 1, T, T)
    scores = scores.masked_fill(~allowed, float("-inf"))
    attn = F.softmax(scores, dim=-1)  # (B, H, T, T), each row sums to 1 over the keys
    return attn @ v  # (B, H, T, T) @ (B, H, T, D) -> (B, H, T, D)
