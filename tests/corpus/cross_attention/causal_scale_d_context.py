# attnprep: cross_attention
# expect: wrong_output
# diagnosis: cross_causal_mask + cross_scale_d_context
"""A decoder block's habit carried over: a causal tril on the (T, S) cross scores, and the scale taken
from the context's width, 1/sqrt(d_context)."""

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_context or d_model
        self.n_heads = num_heads
        self.scale = d_context ** -0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, context, context_mask=None):
        B, T, C = x.shape
        S = context.shape[1]
        H = self.n_heads
        q = self.q_proj(x).view(B, T, H, -1).transpose(1, 2)
        k = self.k_proj(context).view(B, S, H, -1).transpose(1, 2)
        v = self.v_proj(context).view(B, S, H, -1).transpose(1, 2)
        att = q @ k.transpose(-2, -1) * self.scale
        att = att.masked_fill(~torch.ones(T, S, dtype=torch.bool, device=x.device).tril(), float("-inf"))
        if context_mask is not None:
            att = att.masked_fill(~context_mask[:, None, None, :], float("-inf"))
        y = att.softmax(-1) @ v
        return self.o_proj(y.transpose(1, 2).reshape(B, T, C))
