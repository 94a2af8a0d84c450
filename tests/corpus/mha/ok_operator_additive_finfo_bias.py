# attnprep: mha
# expect: passed
"""Correct: operator.matmul everywhere, heads split by a generator over the three projections,
the masks combined into one additive float bias (finfo.min where blocked), F.dropout with
training=self.training, a typing.Final constant for the neutral bias."""

import math
import operator
from typing import Final

import torch
import torch.nn as nn
import torch.nn.functional as F

ZERO: Final = 0.0


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h, self.p = num_heads, dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        D = C // self.h
        q, k, v = (f(x).view(B, T, self.h, D).transpose(1, 2) for f in (self.q_proj, self.k_proj, self.v_proj))
        blocked = torch.zeros(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            blocked = blocked | ~attention_mask[:, None, None, :]
        if is_causal:
            blocked = blocked | torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        bias = torch.full(blocked.shape, ZERO, dtype=x.dtype, device=x.device).masked_fill(blocked, torch.finfo(x.dtype).min)
        s = operator.add(operator.matmul(q, k.transpose(-1, -2)) / math.sqrt(D), bias)
        a = F.dropout(s.softmax(-1), p=self.p, training=self.training)
        return self.o_proj(operator.matmul(a, v).transpose(1, 2).reshape(B, T, C))
