# attnprep: mha
# expect: mask_leak
# diagnosis: padding_mask_ignored
"""GPT-NeoX-flavoured: under is_causal the padding mask is dropped ("causal already hides padding"),
true for right padding only; left-padded causal cases show it."""

import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_attention_heads = num_heads
        self.head_size = d_model // num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.dense = nn.Linear(d_model, d_model)
        self.attention_dropout = nn.Dropout(dropout)

    def _split(self, t):
        b, s, _ = t.shape
        return t.view(b, s, self.num_attention_heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, x, attention_mask=None, is_causal=False):
        b, s, hidden = x.shape
        q, k, v = self._split(self.query(x)), self._split(self.key(x)), self._split(self.value(x))
        attn_scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
        if is_causal:
            causal = torch.tril(torch.ones(s, s, dtype=torch.bool, device=x.device))
            attn_scores = attn_scores.masked_fill(~causal, torch.finfo(attn_scores.dtype).min)
        elif attention_mask is not None:
            attn_scores = attn_scores.masked_fill(~attention_mask[:, None, None, :], torch.finfo(attn_scores.dtype).min)
        probs = self.attention_dropout(torch.softmax(attn_scores, dim=-1))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(b, s, hidden)
        return self.dense(ctx)
