# attnprep: mha
# expect: mask_leak
# diagnosis: padding_mask_ignored
"""Projections created in bfloat16 and cast to the input's dtype at use; the padding mask is taken
as an argument and never applied."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        kw = dict(dtype=torch.bfloat16)
        self.n = num_heads
        self.q_proj = nn.Linear(d_model, d_model, **kw)
        self.k_proj = nn.Linear(d_model, d_model, **kw)
        self.v_proj = nn.Linear(d_model, d_model, **kw)
        self.o_proj = nn.Linear(d_model, d_model, **kw)

    @staticmethod
    def _lin(layer, x):
        return F.linear(x, layer.weight.to(x.dtype), layer.bias.to(x.dtype))

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        D = C // self.n
        q, k, v = (self._lin(l, x).view(B, T, self.n, D).transpose(1, 2) for l in (self.q_proj, self.k_proj, self.v_proj))
        s = q @ k.transpose(-2, -1) * D ** -0.5
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), -math.inf)
        o = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, T, C)
        return self._lin(self.o_proj, o)
# bug-line: 35
