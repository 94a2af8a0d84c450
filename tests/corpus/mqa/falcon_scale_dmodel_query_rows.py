# attnprep: mqa
# expect: mask_leak
# diagnosis: padding_mask_on_queries + scale_d_model
"""Falcon-style multi-query attention, two slips: inv_norm_factor over the whole hidden size, and the
padding mask laid on the query rows ([:, None, :, None]) instead of the key columns."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.hidden_size = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.inv_norm_factor = 1.0 / math.sqrt(self.hidden_size)
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_dim)
        self.v_proj = nn.Linear(d_model, self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attention_dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        batch_size, q_length, _ = x.shape
        query_layer = self.q_proj(x).view(batch_size, q_length, self.num_heads, self.head_dim).transpose(1, 2)
        key_layer = self.k_proj(x).unsqueeze(1)  # (B, 1, T, D)
        value_layer = self.v_proj(x).unsqueeze(1)
        attention_scores = query_layer @ key_layer.transpose(-1, -2) * self.inv_norm_factor
        if is_causal:
            causal = torch.ones(q_length, q_length, device=x.device, dtype=torch.bool).triu(1)
            attention_scores = attention_scores.masked_fill(causal, -1e9)
        if attention_mask is not None:
            attention_scores = attention_scores.masked_fill(~attention_mask[:, None, :, None], -1e9)
        attention_probs = self.attention_dropout(F.softmax(attention_scores, dim=-1))
        context = (attention_probs @ value_layer).transpose(1, 2).reshape(batch_size, q_length, self.hidden_size)
        return self.o_proj(context)
# bug-line: 20, 37
