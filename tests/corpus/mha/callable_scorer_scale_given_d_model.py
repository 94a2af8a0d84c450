# attnprep: mha
# expect: wrong_output
# diagnosis: scale_d_model
"""A small callable `Scorer` object holding its scale, built once in __init__ and called on the
split heads (`self.score(q, k)`), the mask applied with masked_fill after it. The scorer is handed
1/sqrt(d_model) where 1/sqrt(head_dim) belongs: the mistake is typed where it is built."""

import math

import torch
import torch.nn as nn


class Scorer:
    def __init__(self, scale):
        self.scale = scale

    def __call__(self, q, k):
        return (q @ k.transpose(-2, -1)) * self.scale


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h, self.d = num_heads, d_model // num_heads
        self.score = Scorer(1.0 / math.sqrt(d_model))
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = (p(x).view(B, T, self.h, self.d).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        s = self.score(q, k)
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        y = self.dropout(s.softmax(dim=-1)) @ v
        return self.o_proj(y.transpose(1, 2).reshape(B, T, C))
# bug-line: 26
