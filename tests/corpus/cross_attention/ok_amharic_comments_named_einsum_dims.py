# attnprep: cross_attention
# expect: passed
"""የአማርኛ አስተያየቶች (Amharic comments), einsum with the dims spelled as letters that say what they are
(b batch, q query, k context key, h head, d head width) on (B, T, H, D) tensors that are never
transposed; the padded context keys masked with the dtype's lowest value."""
import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_model if d_context is None else d_context
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, context, context_mask=None):
        B, T, C = x.shape
        S = context.shape[1]
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim)  # ጥያቄዎች
        k = self.k_proj(context).view(B, S, self.num_heads, self.head_dim)  # ቁልፎች
        v = self.v_proj(context).view(B, S, self.num_heads, self.head_dim)  # እሴቶች
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.head_dim)
        if context_mask is not None:  # የተሞሉ ቁልፎች አይታዩም
            scores = scores.masked_fill(~context_mask[:, None, None, :], torch.finfo(scores.dtype).min)
        probs = self.dropout(scores.softmax(dim=-1))
        out = torch.einsum("bhqk,bkhd->bqhd", probs, v).reshape(B, T, C)
        return self.o_proj(out)
