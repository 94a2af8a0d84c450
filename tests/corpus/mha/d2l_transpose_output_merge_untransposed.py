# attnprep: mha
# expect: wrong_output
# diagnosis: merge_heads_no_transpose
"""Dive into Deep Learning (d2l.ai) chapter 11 habits: module-level transpose_qkv / transpose_output
helpers that fold the heads into the batch ((B*H, T, D)), a sequence_mask-like helper filling with
-1e6, masked_softmax on 3-D scores, DotProductAttention with its own dropout module, W_q / W_k / W_v /
W_o names. transpose_output reshapes (B*H, T, D) straight to (B, T, C) without moving the heads back
after the tokens."""

import math

import torch
from torch import nn


def transpose_qkv(X, num_heads):
    # (B, T, C) -> (B, T, H, D) -> (B, H, T, D) -> (B*H, T, D)
    X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)
    X = X.permute(0, 2, 1, 3)
    return X.reshape(-1, X.shape[2], X.shape[3])


def transpose_output(X, num_heads):
    # (B*H, T, D) -> (B, T, C)
    X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])  # (B, H, T, D)
    return X.reshape(X.shape[0], X.shape[2], -1)


def masked_softmax(X, keep):
    """X: (B*H, T, T) scores; keep: (B*H, T, T) bool or None."""
    if keep is None:
        return nn.functional.softmax(X, dim=-1)
    X = X.masked_fill(~keep, -1e6)
    return nn.functional.softmax(X, dim=-1)


class DotProductAttention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, keep=None):
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, keep)
        return torch.bmm(self.dropout(self.attention_weights), values)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        queries = transpose_qkv(self.W_q(x), self.num_heads)
        keys = transpose_qkv(self.W_k(x), self.num_heads)
        values = transpose_qkv(self.W_v(x), self.num_heads)
        keep = torch.ones(B, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, :]
        if is_causal:
            keep = keep & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        keep = keep.repeat_interleave(self.num_heads, dim=0)  # (B*H, T, T), sample-major like the heads
        output = self.attention(queries, keys, values, keep)
        output_concat = transpose_output(output, self.num_heads)
        return self.W_o(output_concat)
# bug-line: 26
