# attnprep: cross_attention
# expect: mask_leak
# diagnosis: padding_mask_inverted
"""Interview-notes style with a float bias: the context mask is turned into -inf where it is True,
so the real context tokens are blocked and the padding is attended."""

import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_model if d_context is None else d_context
        self.h = num_heads
        self.dk = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, context, context_mask=None):
        B, T, _ = x.shape
        S = context.size(1)
        q = self.q_proj(x).reshape(B, T, self.h, self.dk).transpose(1, 2)
        k = self.k_proj(context).reshape(B, S, self.h, self.dk).transpose(1, 2)
        v = self.v_proj(context).reshape(B, S, self.h, self.dk).transpose(1, 2)
        att = q @ k.transpose(-1, -2) / math.sqrt(self.dk)
        if context_mask is not None:
            bias = torch.zeros(B, S, dtype=att.dtype, device=att.device).masked_fill(context_mask, float("-inf"))
            att = att + bias[:, None, None, :]
        att = self.drop(att.softmax(dim=-1))
        return self.o_proj((att @ v).transpose(1, 2).reshape(B, T, -1))
# bug-line: 33
