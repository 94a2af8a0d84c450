# attnprep: mqa
# expect: wrong_output
# diagnosis: scale_d_model
"""Falcon-7B's multi-query layout: the query heads folded into the batch and one shared K/V head,
torch.bmm against the expanded key; the inverse norm factor is taken over the hidden size."""

import math

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.inv_norm_factor = 1.0 / math.sqrt(d_model)
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_dim)
        self.v_proj = nn.Linear(d_model, self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        H, D = self.num_heads, self.head_dim
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2).reshape(B * H, T, D)
        k = self.k_proj(x).unsqueeze(1).expand(B, H, T, D).reshape(B * H, T, D)
        v = self.v_proj(x).unsqueeze(1).expand(B, H, T, D).reshape(B * H, T, D)
        scores = torch.bmm(q, k.transpose(1, 2)).view(B, H, T, T) * self.inv_norm_factor
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], -1e9)
        if is_causal:
            scores = scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), 1), -1e9)
        probs = scores.softmax(dim=-1).reshape(B * H, T, T)
        out = torch.bmm(probs, v).view(B, H, T, D).transpose(1, 2).reshape(B, T, H * D)
        return self.o_proj(out)
# bug-line: 18
