# attnprep: cross_attention
# expect: passed
"""Flamingo-like gated-free cross-attention: media as the context, heads flattened into the batch,
torch.bmm for both products, a float bias for the media mask: correct."""

import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        self.heads = num_heads
        self.dim_head = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context or d_model, d_model)
        self.v_proj = nn.Linear(d_context or d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, context, context_mask=None):
        b, t, _ = x.shape
        s = context.shape[1]
        h, d = self.heads, self.dim_head

        def fold(z, n):
            return z.view(b, n, h, d).transpose(1, 2).reshape(b * h, n, d)

        q = fold(self.q_proj(x), t) * d ** -0.5
        k, v = fold(self.k_proj(context), s), fold(self.v_proj(context), s)
        sim = torch.bmm(q, k.transpose(1, 2))
        if context_mask is not None:
            bias = torch.zeros(b, s, dtype=x.dtype, device=x.device).masked_fill(~context_mask, -math.inf)
            sim = sim + bias.repeat_interleave(h, dim=0)[:, None, :]
        out = torch.bmm(sim.softmax(-1), v).view(b, h, t, d).transpose(1, 2).reshape(b, t, h * d)
        return self.o_proj(out)
