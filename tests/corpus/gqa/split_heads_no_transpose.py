# attnprep: gqa
# expect: wrong_output
# diagnosis: split_heads_no_transpose
"""GQA that views the projections straight to (B, H, T, D) / (B, G, T, D) without the transpose."""

import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, G, D = self.num_heads, self.num_kv_heads, self.head_dim

        q = self.q_proj(x).view(B, H, T, D)
        k = self.k_proj(x).view(B, G, T, D)
        v = self.v_proj(x).view(B, G, T, D)
        k = k.repeat_interleave(H // G, dim=1)  # (B, H, T, D)
        v = v.repeat_interleave(H // G, dim=1)

        scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, T)
        if is_causal:
            causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
            scores = scores.masked_fill(~causal, float("-inf"))
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))

        attn = self.dropout(scores.softmax(dim=-1))
        out = attn @ v  # (B, H, T, D)
        out = out.transpose(1, 2).contiguous().view(B, T, C)
        return self.o_proj(out)
