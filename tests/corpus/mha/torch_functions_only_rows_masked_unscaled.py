# attnprep: mha
# expect: mask_leak
# diagnosis: padding_mask_on_queries + missing_scale
"""No operators at all, only torch functions (torch.matmul, torch.add, torch.mul, torch.div,
torch.transpose, torch.reshape, torch.masked_fill), the way code meant for symbolic tracing or an
exporter that dislikes Python operators is sometimes written."""
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.d_model, self.num_heads = d_model, num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)

    def heads(self, t, B, T):
        return torch.transpose(torch.reshape(t, (B, T, self.num_heads, self.head_dim)), 1, 2)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        q = self.heads(self.q_proj(x), B, T)
        k = self.heads(self.k_proj(x), B, T)
        v = self.heads(self.v_proj(x), B, T)
        scores = torch.matmul(q, torch.transpose(k, -2, -1))
        neg = torch.finfo(scores.dtype).min
        if attention_mask is not None:
            pad = torch.logical_not(torch.reshape(attention_mask, (B, 1, T, 1)))
            scores = torch.masked_fill(scores, pad, neg)
        if is_causal:
            future = torch.triu(torch.ones((T, T), dtype=torch.bool, device=x.device), diagonal=1)
            scores = torch.masked_fill(scores, future, neg)
        probs = self.attn_dropout(torch.softmax(scores, dim=-1))
        ctx = torch.reshape(torch.transpose(torch.matmul(probs, v), 1, 2), (B, T, self.d_model))
        return self.o_proj(ctx)
# bug-line: 32, 35
