# attnprep: mqa
# expect: mask_leak
# diagnosis: causal_leaks_next + dropout_in_eval
"""functools.singledispatchmethod on the mask argument (None, a bool tensor) to build the additive
bias, one shared key / value head, dropout through F.dropout with an explicit `p`."""
import math
from functools import singledispatchmethod

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_dim)
        self.v_proj = nn.Linear(d_model, self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)
        self.p = dropout

    @singledispatchmethod
    def padding_bias(self, mask, like):
        raise TypeError(type(mask))

    @padding_bias.register
    def _(self, mask: type(None), like):
        return torch.zeros((), dtype=like.dtype, device=like.device)

    @padding_bias.register
    def _(self, mask: torch.Tensor, like):
        bias = torch.zeros(mask.shape, dtype=like.dtype, device=like.device)
        return bias.masked_fill(~mask, float("-inf"))[:, None, None, :]

    def causal_bias(self, T, like):
        future = torch.ones(T, T, dtype=torch.bool, device=like.device).triu(2)
        return torch.zeros(T, T, dtype=like.dtype, device=like.device).masked_fill(future, float("-inf"))

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).unsqueeze(1)
        v = self.v_proj(x).unsqueeze(1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim) + self.padding_bias(attention_mask, q)
        if is_causal:
            s = s + self.causal_bias(T, q)
        a = F.dropout(s.softmax(-1), p=self.p)
        return self.o_proj((a @ v).transpose(1, 2).reshape(B, T, C))
# bug-line: 38, 49
