# attnprep: cross_attention
# expect: passed
"""Correct: the 1/sqrt(head_dim) scale kept as a frozen 0-d parameter (moves with .to(), never trained); finfo.min fill."""
import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_context or d_model
        self.h = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        # the scale kept as a frozen parameter (moves with .to(), saved in the state dict, never trained)
        self.scale = nn.Parameter(torch.tensor(1.0 / math.sqrt(d_model // num_heads)), requires_grad=False)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, context, context_mask=None):
        B, T, C = x.shape
        S = context.shape[1]
        q = self.q_proj(x).view(B, T, self.h, -1).transpose(1, 2)
        k = self.k_proj(context).view(B, S, self.h, -1).transpose(1, 2)
        v = self.v_proj(context).view(B, S, self.h, -1).transpose(1, 2)
        a = (q @ k.transpose(-2, -1)) * self.scale
        if context_mask is not None:
            a = a.masked_fill(context_mask[:, None, None, :].logical_not(), torch.finfo(a.dtype).min)
        a = self.drop(a.softmax(-1))
        return self.o_proj((a @ v).transpose(1, 2).reshape(B, T, C))
