# attnprep: mqa
# expect: wrong_output
# diagnosis: scale_d_model
"""MindSpore-style multi-query attention: ops.ExpandDims / ops.BroadcastTo habits as unsqueeze and
expand, a Cell whose `construct` is forward, and the scale written as 1/sqrt(hidden_size) (the
model's width) instead of one head's width."""

import math

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.hidden_size, self.n_head = d_model, num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_dim)
        self.v_proj = nn.Linear(d_model, self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attn_drop = nn.Dropout(dropout)
        self.inv_norm_factor = 1.0 / math.sqrt(self.hidden_size)

    def construct(self, x, attention_mask, is_causal):
        B, T, _ = x.shape
        q = self.q_proj(x).reshape(B, T, self.n_head, self.head_dim).permute(0, 2, 1, 3)
        k = self.k_proj(x).unsqueeze(1).expand(B, self.n_head, T, self.head_dim)
        v = self.v_proj(x).unsqueeze(1).expand(B, self.n_head, T, self.head_dim)
        score = torch.matmul(q, k.permute(0, 1, 3, 2)) * self.inv_norm_factor
        keep = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            keep = keep & attention_mask.unsqueeze(1).unsqueeze(2)
        if is_causal:
            keep = keep & torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        score = torch.where(keep, score, torch.full_like(score, float("-inf")))
        probs = self.attn_drop(torch.softmax(score, dim=-1))
        out = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(B, T, self.hidden_size)
        return self.o_proj(out)

    def forward(self, x, attention_mask=None, is_causal=False):
        return self.construct(x, attention_mask, is_causal)
# bug-line: 24
