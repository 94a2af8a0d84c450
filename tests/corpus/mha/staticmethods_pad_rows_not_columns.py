# attnprep: mha
# expect: mask_leak
# diagnosis: padding_mask_on_queries
"""A class of staticmethods as the attention toolkit (Ops.split, Ops.merge, Ops.scores, Ops.mask,
Ops.attend), the module holding only the layers. Ops.mask broadcasts the padding mask as
(B, 1, T, 1): it blanks the padded query rows instead of the padded key columns."""

import math

import torch
import torch.nn as nn


class Ops:
    @staticmethod
    def split(t, h):
        return t.unflatten(-1, (h, -1)).transpose(1, 2)

    @staticmethod
    def merge(t):
        return t.transpose(1, 2).flatten(2)

    @staticmethod
    def scores(q, k):
        return q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))

    @staticmethod
    def mask(s, attention_mask, is_causal):
        T = s.size(-1)
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, :, None], float("-inf"))
        return s

    @staticmethod
    def attend(s, v, drop):
        return drop(s.softmax(-1)) @ v


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        q, k, v = (Ops.split(p(x), self.h) for p in (self.q_proj, self.k_proj, self.v_proj))
        s = Ops.mask(Ops.scores(q, k), attention_mask, is_causal)
        return self.o_proj(Ops.merge(Ops.attend(s, v, self.drop)))
# bug-line: 33
