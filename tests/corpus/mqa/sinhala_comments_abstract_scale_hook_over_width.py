# attnprep: mqa
# expect: wrong_output
# diagnosis: scale_by_dim
"""Sinhala comments; an abstract base class fixes the attention's steps and leaves the scale to a
hook its one subclass fills in, and the subclass's hook returns one over the head width (the square
root left out)."""
import math

import torch
import torch.nn as nn


class ScoreRule:
    def factor(self, q):
        raise NotImplementedError("subclass it")

    def scores(self, q, k):
        # ලකුණු: q · kᵀ, පසුව පරිමාණය
        return (q @ k.transpose(-2, -1)) * self.factor(q)


class HeadWidthRule(ScoreRule):
    def factor(self, q):
        return 1.0 / q.shape[-1]


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.n_head = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_dim)
        self.v_proj = nn.Linear(d_model, self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)
        self.rule = HeadWidthRule()

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        # එක් යතුරු ශීර්ෂයක් සියලු විමසුම් ශීර්ෂ සඳහා
        q = self.q_proj(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        k = self.k_proj(x)[:, None]
        v = self.v_proj(x)[:, None]
        s = self.rule.scores(q, k)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        out = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out)
# bug-line: 24
