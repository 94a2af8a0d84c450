# attnprep: gqa
# expect: wrong_output
# diagnosis: causal_masks_diagonal
"""Positions numbered from 1 as in a paper's notation (t = 1 .. T for the queries, s = 1 .. T for the
keys, counted with cumsum over ones), each grid on its own line, the future blocked with a comparison of the two; KV heads grouped
by a reshape that adds the group axis. The comparison blocks s >= t where s > t belongs: every
query loses its own key (the first token sees nothing at all)."""

import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.h, self.g, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        G, R, D = self.g, self.h // self.g, self.d
        q = self.q_proj(x).view(B, T, G, R, D).permute(0, 2, 3, 1, 4)  # (B, G, R, T, D)
        k = self.k_proj(x).view(B, T, G, 1, D).permute(0, 2, 3, 1, 4)  # (B, G, 1, T, D)
        v = self.v_proj(x).view(B, T, G, 1, D).permute(0, 2, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(D)  # (B, G, R, T, T)
        if is_causal:
            t = torch.ones(T, 1, device=x.device).cumsum(0)  # query positions 1 .. T, a column
            s = torch.ones(1, T, device=x.device).cumsum(1)  # key positions 1 .. T, a row
            future = s >= t
            scores = scores.masked_fill(future, float("-inf"))
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask.view(B, 1, 1, 1, T), float("-inf"))
        probs = self.dropout(scores.softmax(dim=-1))
        out = (probs @ v).permute(0, 3, 1, 2, 4).reshape(B, T, C)  # (B, T, G, R, D) -> (B, T, C)
        return self.o_proj(out)
# bug-line: 35
