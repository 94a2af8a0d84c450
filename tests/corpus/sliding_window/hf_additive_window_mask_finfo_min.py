# attnprep: sliding_window
# expect: wrong_output
# diagnosis: mask_dtype
"""Hugging Face's _make_sliding_window_causal_mask habits (modeling_attn_mask_utils, Mistral's
first implementation): the mask built as an additive float tensor, `torch.full((T, T),
torch.finfo(dtype).min)`, zeroed on the band with masked_fill, and sliding_window_attention adding
it to the scores (right: it converts a bool mask too). sliding_window_mask returns that float mask
where the contract wants bool True = allowed."""

import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    i = torch.arange(seq_len, device=device).view(-1, 1)
    j = torch.arange(seq_len, device=device).view(1, -1)
    band = (j <= i) & (j > i - window)
    mask = torch.full((seq_len, seq_len), torch.finfo(torch.float32).min, device=device)
    return mask.masked_fill(band, 0.0)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    bias = sliding_window_mask(T, window, device=q.device)
    if bias.dtype == torch.bool:
        bias = torch.zeros(T, T, device=q.device).masked_fill(~bias, torch.finfo(torch.float32).min)
    scores = q @ k.transpose(-1, -2) / math.sqrt(D) + bias.to(q.dtype)
    if attention_mask is not None:
        scores = scores.masked_fill(~attention_mask[:, None, None, :], torch.finfo(q.dtype).min)
    return scores.softmax(dim=-1) @ v
# bug-line: 20
