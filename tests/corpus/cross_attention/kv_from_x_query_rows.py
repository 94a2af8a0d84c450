# attnprep: cross_attention
# expect: error
# diagnosis: cross_kv_from_x + padding_mask_on_queries
"""A self-attention block renamed: keys and values projected from x, and the context mask put on the
query rows. It raises where d_context != d_model; the config where it computes names both."""
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

    def forward(self, x, context, context_mask=None):
        B, T, C = x.shape
        d = C // self.h
        q = self.q_proj(x).view(B, T, self.h, d).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.h, d).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.h, d).transpose(1, 2)
        s = q @ k.transpose(-2, -1) / math.sqrt(d)
        if context_mask is not None:
            s = s.masked_fill(~context_mask[:, None, :, None], float("-inf"))
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))
