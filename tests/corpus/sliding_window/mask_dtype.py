# attnprep: sliding_window
# expect: wrong_output
# diagnosis: mask_dtype
"""The band has the right values as 0/1 floats (Mistral's one-file style before the log): attention
uses it as `== 0` and is right, but sliding_window_mask's contract is a bool tensor."""

import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    mask = torch.full((seq_len, seq_len), fill_value=1.0, device=device)
    mask = torch.tril(mask, diagonal=0)
    return torch.triu(mask, diagonal=-(window - 1))  # (T, T) float 0/1


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, T)
    scores = scores.masked_fill(sliding_window_mask(T, window, q.device) == 0, float("-inf"))
    if attention_mask is not None:
        scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
    return scores.softmax(dim=-1) @ v  # (B, H, T, D)
