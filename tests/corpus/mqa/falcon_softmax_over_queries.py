# attnprep: mqa
# expect: wrong_output
# diagnosis: softmax_wrong_dim
"""Falcon-style multi-query attention (one shared K/V head broadcast with expand) whose softmax runs
over the queries (dim=-2) instead of the keys."""

import math

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.inv_norm_factor = 1.0 / math.sqrt(self.head_dim)
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_dim)
        self.v_proj = nn.Linear(d_model, self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attention_dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        batch_size, q_length, _ = x.shape
        query_layer = self.q_proj(x).view(batch_size, q_length, self.num_heads, self.head_dim).transpose(1, 2)
        key_layer = self.k_proj(x).view(batch_size, 1, q_length, self.head_dim)
        value_layer = self.v_proj(x).view(batch_size, 1, q_length, self.head_dim)
        key_layer = key_layer.expand(-1, self.num_heads, -1, -1)
        value_layer = value_layer.expand(-1, self.num_heads, -1, -1)

        attention_scores = query_layer @ key_layer.transpose(-1, -2)
        attention_scores = attention_scores * self.inv_norm_factor
        if attention_mask is not None:
            attention_scores = attention_scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            tri = torch.ones(q_length, q_length, dtype=torch.bool, device=x.device).tril()
            attention_scores = attention_scores.masked_fill(~tri, float("-inf"))
        attention_probs = torch.softmax(attention_scores, dim=-2)
        attention_probs = self.attention_dropout(attention_probs)
        context = (attention_probs @ value_layer).transpose(1, 2).reshape(batch_size, q_length, -1)
        return self.o_proj(context)
# bug-line: 40
