"""Sliding-window attention (Mistral's), as two plain functions.

sliding_window_mask builds the banded causal mask: query i sees itself and the window - 1 keys
before it, i.e. key j with i - window < j <= i (Hugging Face's `kv_idx > q_idx - sliding_window`
on top of the causal mask). sliding_window_attention applies it, with an optional key padding
mask, to the scores q·kᵀ / sqrt(D) before the softmax.
"""

import math

import torch
import torch.nn.functional as F


def sliding_window_mask(seq_len: int, window: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Bool (seq_len, seq_len): True where query i may attend key j, i.e. i - window < j <= i."""
    ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)  # (T, T)
    causal = torch.tril(ones)  # j <= i
    recent = torch.triu(ones, diagonal=-(window - 1))  # j >= i - (window - 1), i.e. i - j < window
    return causal & recent  # (T, T): a band of width window ending on the diagonal


def sliding_window_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int, attention_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """softmax(q·kᵀ / sqrt(D) + window and padding masks)·v for q, k, v of shape (B, H, T, D).

    attention_mask: optional bool (B, T), True = real token; padded keys get zero attention.
    """
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, D) @ (B, H, D, T) -> (B, H, T, T)
    allowed = sliding_window_mask(T, window, device=q.device)  # (T, T)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]  # (T, T) & (B, 1, 1, T) -> (B, 1, T, T)
    scores = scores.masked_fill(~allowed, float("-inf"))
    attn = F.softmax(scores, dim=-1)  # (B, H, T, T), each row sums to 1 over the keys in the window
    return attn @ v  # (B, H, T, T) @ (B, H, T, D) -> (B, H, T, D)
