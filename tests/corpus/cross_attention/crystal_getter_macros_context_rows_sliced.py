# attnprep: cross_attention
# expect: error
# diagnosis: padding_mask_on_queries
"""A Crystal programmer's habits: getter / property macros written as read-only properties, `unless`
as `if not`, `.tap` for a side step and a `to_heads` method on each projection; the context mask
sliced to the queries' length and put on the query rows (it raises when the context is shorter)."""
import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        self._heads = num_heads
        self._width = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model if d_context is None else d_context, d_model)
        self.v_proj = nn.Linear(d_model if d_context is None else d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    @property
    def heads(self):  # getter heads : Int32
        return self._heads

    @property
    def width(self):  # getter width : Int32
        return self._width

    def to_heads(self, t):
        b, n, _ = t.shape
        return t.view(b, n, self.heads, self.width).transpose(1, 2)

    def forward(self, x, context, context_mask=None):
        b, t, c = x.shape
        q = self.to_heads(self.q_proj(x))
        k = self.to_heads(self.k_proj(context))
        v = self.to_heads(self.v_proj(context))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.width)
        if not (context_mask is None):  # unless context_mask.nil?
            rows = context_mask[:, :t]
            scores = scores.masked_fill(~rows[:, None, :, None], -1e9)
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c)
        return self.o_proj(out)
# bug-line: 42, 43
