# attnprep: gqa
# expect: wrong_output
# diagnosis: attn_times_k
"""KV heads grouped with repeat_interleave, but the output is attn @ k: the grouped values are never used."""

import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        assert d_model % num_heads == 0, "d_model must be divisible by num_heads"
        assert num_heads % num_kv_heads == 0, "num_heads must be a multiple of num_kv_heads"
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.n_rep = num_heads // num_kv_heads

        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, G, D = self.num_heads, self.num_kv_heads, self.head_dim

        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        k = self.k_proj(x).view(B, T, G, D).transpose(1, 2)  # (B, G, T, D)
        v = self.v_proj(x).view(B, T, G, D).transpose(1, 2)  # (B, G, T, D)

        # query heads [0, n_rep) share KV head 0, [n_rep, 2*n_rep) share KV head 1, ...
        k = k.repeat_interleave(self.n_rep, dim=1)  # (B, H, T, D)
        v = v.repeat_interleave(self.n_rep, dim=1)  # (B, H, T, D)

        scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, T)
        if is_causal:
            causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
            scores = scores.masked_fill(~causal, float("-inf"))
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))

        attn = scores.softmax(dim=-1)
        attn = self.dropout(attn)
        out = attn @ k  # (B, H, T, D)
        out = out.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.o_proj(out)
