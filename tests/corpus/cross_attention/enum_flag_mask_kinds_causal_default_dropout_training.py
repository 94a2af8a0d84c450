# attnprep: cross_attention
# expect: wrong_output
# diagnosis: cross_causal_mask + dropout_in_eval
"""Enum flags for which masks apply (`MaskKind.PADDING | MaskKind.CAUSAL`, a class attribute the
constructor copies), `functional.dropout` called with an explicit `training=` keyword, the
attention written as one method per step."""
import enum
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MaskKind(enum.Flag):
    NONE = 0
    PADDING = enum.auto()
    CAUSAL = enum.auto()


class CrossAttention(nn.Module):
    mask_kinds = MaskKind.PADDING | MaskKind.CAUSAL

    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_model if d_context is None else d_context
        self.h, self.dh = num_heads, d_model // num_heads
        self.p = dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def split(self, t):
        return t.view(t.shape[0], t.shape[1], self.h, self.dh).transpose(1, 2)

    def masked(self, s, context_mask):
        T, S = s.shape[-2], s.shape[-1]
        if MaskKind.PADDING in self.mask_kinds and context_mask is not None:
            s = s.masked_fill(~context_mask[:, None, None, :], float("-inf"))
        if MaskKind.CAUSAL in self.mask_kinds:
            s = s.masked_fill(torch.ones(T, S, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
        return s

    def forward(self, x, context, context_mask=None):
        B, T, C = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(context)), self.split(self.v_proj(context))
        s = self.masked(q @ k.transpose(-2, -1) / math.sqrt(self.dh), context_mask)
        p = F.dropout(s.softmax(-1), p=self.p, training=True)
        return self.o_proj((p @ v).transpose(1, 2).reshape(B, T, C))
# bug-line: 22, 49
