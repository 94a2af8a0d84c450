# attnprep: gqa
# expect: wrong_output
# diagnosis: missing_scale
"""Llama-style repeat_kv GQA that forgets to divide the scores by sqrt(head_dim)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def repeat_kv(x, n_rep):
    B, G, T, D = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None].expand(B, G, n_rep, T, D).reshape(B, G * n_rep, T, D)


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
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, T, D)
        k = self.k_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)  # (B, G, T, D)
        v = self.v_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
        k = repeat_kv(k, self.num_heads // self.num_kv_heads)  # (B, H, T, D)
        v = repeat_kv(v, self.num_heads // self.num_kv_heads)

        scores = torch.matmul(q, k.transpose(-2, -1))  # (B, H, T, T)
        if is_causal:
            mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
            scores = scores.masked_fill(mask, float("-inf"))
        if attention_mask is not None:
            scores = scores.masked_fill(attention_mask[:, None, None, :] == 0, float("-inf"))

        attn = self.dropout(F.softmax(scores, dim=-1))
        out = torch.matmul(attn, v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out)
