# attnprep: mha
# expect: passed
"""Correct: forward decorated with @torch.autocast("cpu", enabled=False); one shared projection
Linear-free function applied with torch.func.functional_call over a template nn.Linear and each
role's own parameters (nn.ParameterDict per role)."""

import math

import torch
import torch.nn as nn
from torch.func import functional_call


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.template = [nn.Linear(d_model, d_model)]  # a list: not registered, weights come from the dicts
        def role():
            lin = nn.Linear(d_model, d_model)
            return nn.ParameterDict({"weight": lin.weight, "bias": lin.bias})
        self.q = role()
        self.k = role()
        self.v = role()
        self.o = role()

    def _apply(self, fn, *args, **kwargs):
        out = super()._apply(fn, *args, **kwargs)
        self.template = [self.template[0]._apply(fn)]
        return out

    def proj(self, params, x):
        return functional_call(self.template[0], dict(params.items()), (x,))

    @torch.autocast("cpu", enabled=False)
    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        D = C // self.h
        q = self.proj(self.q, x).view(B, T, self.h, D).transpose(1, 2)
        k = self.proj(self.k, x).view(B, T, self.h, D).transpose(1, 2)
        v = self.proj(self.v, x).view(B, T, self.h, D).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(D)
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        o = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        return self.proj(self.o, o)
