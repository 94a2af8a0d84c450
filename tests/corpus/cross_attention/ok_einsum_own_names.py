# attnprep: cross_attention
# expect: passed
"""einsum throughout, own layer names (wq, wk, wv, wo), heads kept as (B, T, H, D)."""

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_model if d_context is None else d_context
        self.n_heads = num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_context, d_model)
        self.wv = nn.Linear(d_context, d_model)
        self.wo = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, context, context_mask=None):
        B, T, C = x.shape
        S = context.shape[1]
        H = self.n_heads
        q = self.wq(x).view(B, T, H, C // H)  # (B, T, H, D)
        k = self.wk(context).view(B, S, H, C // H)  # (B, S, H, D)
        v = self.wv(context).view(B, S, H, C // H)
        scores = torch.einsum("bthd,bshd->bhts", q, k) * (C // H) ** -0.5
        if context_mask is not None:
            scores = torch.where(context_mask[:, None, None, :], scores, float("-inf"))
        probs = self.drop(scores.softmax(-1))
        out = torch.einsum("bhts,bshd->bthd", probs, v).reshape(B, T, C)
        return self.wo(out)
