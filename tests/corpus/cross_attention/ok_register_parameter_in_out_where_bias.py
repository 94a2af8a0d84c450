# attnprep: cross_attention
# expect: passed
"""Correct: projections as bare (in, out) parameters with register_parameter under odd names; context mask
turned into an additive bias with torch.where."""
import math
import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_context or d_model
        self.h = num_heads
        for nm, i in (("to_q", d_model), ("to_k", d_context), ("to_v", d_context), ("to_out", d_model)):
            self.register_parameter(f"{nm}_w", nn.Parameter(torch.randn(i, d_model) * i ** -0.5))
            self.register_parameter(f"{nm}_b", nn.Parameter(torch.zeros(d_model)))

    def forward(self, x, context, context_mask=None):
        B, T, C = x.shape
        S = context.shape[1]
        H, D = self.h, C // self.h
        q = (x @ self.to_q_w + self.to_q_b).view(B, T, H, D).transpose(1, 2)
        k = (context @ self.to_k_w + self.to_k_b).view(B, S, H, D).transpose(1, 2)
        v = (context @ self.to_v_w + self.to_v_b).view(B, S, H, D).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(D)
        if context_mask is not None:
            s = s + torch.where(context_mask, 0.0, float("-inf"))[:, None, None, :].to(s.dtype)
        y = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        return y @ self.to_out_w + self.to_out_b
