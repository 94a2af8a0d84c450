# attnprep: cross_attention
# expect: mask_leak
# diagnosis: padding_mask_inverted
"""bmm over (B*H) with torch.where whose branches are swapped: the real context tokens get -1e9."""
import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_model if d_context is None else d_context
        self.H, self.D = num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, context, context_mask=None):
        B, T, C = x.shape
        S = context.shape[1]
        fold = lambda t, n: t.view(B, n, self.H, self.D).transpose(1, 2).reshape(B * self.H, n, self.D)
        q, k, v = fold(self.q_proj(x), T), fold(self.k_proj(context), S), fold(self.v_proj(context), S)
        s = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.D)
        if context_mask is not None:
            m = context_mask[:, None, :].expand(B, self.H, S).reshape(B * self.H, 1, S)
            s = torch.where(m, torch.full_like(s, -1e9), s)
        p = s.softmax(-1)
        o = torch.bmm(p, v).view(B, self.H, T, self.D).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(o)
# bug-line: 29
