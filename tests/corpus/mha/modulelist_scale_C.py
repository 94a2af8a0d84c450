# attnprep: mha
# expect: wrong_output
# diagnosis: scale_d_model
"""Karpathy-style per-head Head modules, but each head scales by C ** -0.5 with C = d_model (the video's single-head formula kept)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Head(nn.Module):
    def __init__(self, d_model, head_size, dropout):
        super().__init__()
        self.key = nn.Linear(d_model, head_size)
        self.query = nn.Linear(d_model, head_size)
        self.value = nn.Linear(d_model, head_size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        k = self.key(x)
        q = self.query(x)
        wei = q @ k.transpose(-2, -1) * C ** -0.5  # (B, T, T)
        if is_causal:
            tril = torch.tril(torch.ones(T, T, device=x.device))
            wei = wei.masked_fill(tril == 0, float("-inf"))
        if attention_mask is not None:
            wei = wei.masked_fill(~attention_mask[:, None, :], float("-inf"))
        wei = F.softmax(wei, dim=-1)
        wei = self.dropout(wei)
        return wei @ self.value(x)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        head_size = d_model // num_heads
        self.heads = nn.ModuleList([Head(d_model, head_size, dropout) for _ in range(num_heads)])
        self.proj = nn.Linear(head_size * num_heads, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        out = torch.cat([h(x, attention_mask, is_causal) for h in self.heads], dim=-1)
        return self.dropout(self.proj(out))
