# attnprep: cross_attention
# expect: passed
"""Correct: inheritance from a base class holding the attention math; the subclass owns a `to_kv` ModuleList of
two Linears and calls super().__init__(num_heads) with arguments."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class BaseAttention(nn.Module):
    def __init__(self, num_heads: int):
        super().__init__()
        self.num_heads = num_heads

    def split(self, t):
        B, N, C = t.shape
        return t.reshape(B, N, self.num_heads, C // self.num_heads).transpose(1, 2)

    def merge(self, t):
        B, H, N, D = t.shape
        return t.transpose(1, 2).reshape(B, N, H * D)

    def core(self, q, k, v, key_mask=None):
        s = (q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1)
        if key_mask is not None:
            s = s.masked_fill(key_mask[:, None, None, :].logical_not(), float("-inf"))
        return F.softmax(s, dim=-1) @ v


class CrossAttention(BaseAttention):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__(num_heads)
        d_context = d_context if d_context is not None else d_model
        self.q_proj = nn.Linear(d_model, d_model)
        self.to_kv = nn.ModuleList([nn.Linear(d_context, d_model), nn.Linear(d_context, d_model)])
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, context, context_mask=None):
        q = self.split(self.q_proj(x))
        k, v = (self.split(layer(context)) for layer in self.to_kv)
        return self.o_proj(self.merge(self.core(q, k, v, context_mask)))
