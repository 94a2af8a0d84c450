# attnprep: cross_attention
# expect: mask_leak
# diagnosis: merge_heads_no_transpose + padding_mask_inverted
"""Every operator spelled as its dunder call (q.__matmul__(k), s.__truediv__(c), m.__invert__()), as
someone writing a tracing proxy keeps them, to see which hook each step goes through; the context
mask used as "True = padding", and the heads merged straight from (B, H, T, D)."""
import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_model if d_context is None else d_context
        self.h = num_heads
        self.d = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, context, context_mask=None):
        B, T, C = x.shape
        S = context.shape[1]
        q = self.q_proj(x).reshape(B, T, self.h, self.d).transpose(1, 2)
        k = self.k_proj(context).reshape(B, S, self.h, self.d).transpose(1, 2)
        v = self.v_proj(context).reshape(B, S, self.h, self.d).transpose(1, 2)
        s = q.__matmul__(k.transpose(-2, -1)).__truediv__(math.sqrt(self.d))  # (B, H, T, S)
        if context_mask is not None:
            padded = context_mask.__getitem__((slice(None), None, None, slice(None)))
            s = s.masked_fill(padded, float("-inf"))
        p = self.drop(s.softmax(dim=-1))
        o = p.__matmul__(v)  # (B, H, T, D)
        o = o.reshape(B, T, C)
        return self.o_proj(o)
# bug-line: 33, 37
