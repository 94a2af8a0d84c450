# attnprep: mqa
# expect: mask_leak
# diagnosis: causal_leaks_next + padding_mask_inverted
"""Descriptor-based configuration: a PositiveInt descriptor (__set_name__, __get__, __set__) validates
the layer's sizes as they are assigned; the masks are built by two small methods returning boolean
"blocked" tensors."""
import math

import torch
import torch.nn as nn


class PositiveInt:
    def __set_name__(self, owner, name):
        self.private = "_" + name

    def __get__(self, obj, objtype=None):
        return getattr(obj, self.private)

    def __set__(self, obj, value):
        if int(value) <= 0:
            raise ValueError(f"{self.private[1:]} must be positive, got {value}")
        object.__setattr__(obj, self.private, int(value))


class MultiQueryAttention(nn.Module):
    num_heads = PositiveInt()
    head_size = PositiveInt()

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_size = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_size)
        self.v_proj = nn.Linear(d_model, self.head_size)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attn_drop = nn.Dropout(dropout)

    def blocked_future(self, T, device):
        return torch.triu(torch.ones(T, T, dtype=torch.bool, device=device), diagonal=2)

    def blocked_padding(self, attention_mask):
        return attention_mask[:, None, None, :]

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_size).transpose(1, 2)
        k = self.k_proj(x).unsqueeze(1).expand(B, self.num_heads, T, self.head_size)
        v = self.v_proj(x).unsqueeze(1).expand(B, self.num_heads, T, self.head_size)
        s = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_size)
        if is_causal:
            s = s.masked_fill(self.blocked_future(T, x.device), float("-inf"))
        if attention_mask is not None:
            s = s.masked_fill(self.blocked_padding(attention_mask), float("-inf"))
        p = self.attn_drop(s.softmax(dim=-1))
        out = (p @ v).transpose(1, 2).reshape(B, T, -1)
        return self.o_proj(out)
# bug-line: 41, 44
