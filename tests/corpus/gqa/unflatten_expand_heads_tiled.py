# attnprep: gqa
# expect: wrong_output
# diagnosis: gqa_heads_tiled
"""unflatten / movedim / expand habits: the KV heads widened to the query heads by inserting a group
axis and flattening. The new axis is put before the KV-head axis, (B, R, KV, T, D) flattened to
(B, R*KV, T, D): heads come out tiled [k0, k1, k0, k1] instead of grouped [k0, k0, k1, k1]."""

import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.h, self.kv = num_heads, num_kv_heads
        self.d = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def widen(self, t):  # (B, KV, T, D) -> (B, H, T, D)
        B, KV, T, D = t.shape
        return t.unsqueeze(1).expand(B, self.h // KV, KV, T, D).flatten(1, 2)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        q = self.q_proj(x).unflatten(-1, (self.h, self.d)).movedim(2, 1)
        k = self.widen(self.k_proj(x).unflatten(-1, (self.kv, self.d)).movedim(2, 1))
        v = self.widen(self.v_proj(x).unflatten(-1, (self.kv, self.d)).movedim(2, 1))
        s = q @ k.swapaxes(-1, -2) / math.sqrt(self.d)
        allowed = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            allowed = allowed.tril()
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        s = s.masked_fill(~allowed, float("-inf"))
        y = self.dropout(s.softmax(-1)) @ v
        return self.o_proj(y.movedim(1, 2).flatten(2))
# bug-line: 27
