# attnprep: sliding_window
# expect: mask_leak
# diagnosis: padding_mask_on_queries
"""One float bias table for every mask (0 = allowed, -inf = blocked), filled mask after mask with
masked_fill and added once to the scores; the key padding reshaped on a line of its own."""
import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    i = torch.arange(seq_len, device=device)
    delta = i[:, None] - i[None, :]
    return (delta >= 0) & (delta < window)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    bias = torch.zeros(T, T, dtype=q.dtype, device=q.device)
    bias = bias.masked_fill(~sliding_window_mask(T, window, q.device), float("-inf"))
    if attention_mask is not None:
        key_ok = attention_mask[:, None, :, None]
        bias = bias.masked_fill(key_ok.logical_not(), float("-inf"))
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D) + bias
    return torch.matmul(scores.softmax(dim=-1), v)
# bug-line: 22
