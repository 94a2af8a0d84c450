# attnprep: mha_fused
# expect: wrong_output
# diagnosis: fused_qkv_layout
"""qkv viewed (B, T, H, 3*D) then chunked on the last axis: the Megatron / GPT-NeoX per-head layout, not [q; k; v]."""

import math

import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.query_key_value = nn.Linear(d_model, 3 * d_model)
        self.dense = nn.Linear(d_model, d_model)
        self.attention_dropout = nn.Dropout(dropout)

    def forward(self, hidden_states, attention_mask=None, is_causal=False):
        B, T, C = hidden_states.shape
        qkv = self.query_key_value(hidden_states)
        qkv = qkv.view(B, T, self.num_heads, 3 * self.head_dim).permute(0, 2, 1, 3)
        query, key, value = qkv.chunk(3, dim=-1)  # each (B, H, T, D)
        scores = query @ key.transpose(-1, -2) / math.sqrt(self.head_dim)
        if is_causal:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=scores.device).triu(1), float("-inf"))
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        probs = self.attention_dropout(scores.softmax(-1))
        ctx = (probs @ value).permute(0, 2, 1, 3).reshape(B, T, C)
        return self.dense(ctx)
# bug-line: 24, 25
