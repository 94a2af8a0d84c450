# attnprep: cross_attention
# expect: passed
"""Correct: the four projections called through a dict of lambdas keyed by role ("query" reads x,
"key" / "value" read the context), heads split by unflatten + movedim, the context mask applied with
torch.where against -inf, dropout as nn.Dropout (inactive in eval), the head width from d_model."""

import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context or d_model, d_model)
        self.v_proj = nn.Linear(d_context or d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, context, context_mask=None):
        roles = {
            "query": lambda: self.q_proj(x),
            "key": lambda: self.k_proj(context),
            "value": lambda: self.v_proj(context),
        }
        q, k, v = (roles[r]().unflatten(-1, (self.h, -1)).movedim(-2, 1) for r in ("query", "key", "value"))
        s = torch.einsum("bhtd,bhsd->bhts", q, k) / math.sqrt(q.shape[-1])
        if context_mask is not None:
            s = torch.where(context_mask[:, None, None, :], s, torch.tensor(float("-inf"), device=s.device, dtype=s.dtype))
        p = self.drop(s.softmax(-1))
        return self.o_proj(torch.einsum("bhts,bhsd->bhtd", p, v).movedim(1, -2).flatten(-2))
