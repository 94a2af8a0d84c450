# attnprep: cross_attention
# expect: mask_leak
# diagnosis: padding_mask_inverted + output_proj_skipped
"""A `__getattr__` proxy: `self.proj.query(x)` / `self.proj.key(ctx)` resolve to the module's own
q_proj / k_proj through a tiny `_Roles` proxy holding a weakref to the module. Two slips: the
context mask is used as "True = padding" (masked_fill(context_mask, -inf)), and the merged heads
are returned without o_proj."""

import math
import weakref

import torch
import torch.nn as nn


class _Roles:
    NAMES = {"query": "q_proj", "key": "k_proj", "value": "v_proj", "out": "o_proj"}

    def __init__(self, owner):
        self._owner = weakref.ref(owner)

    def __getattr__(self, role):
        return getattr(self._owner(), self.NAMES[role])


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_context or d_model
        self.h = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.proj = _Roles(self)

    def forward(self, x, context, context_mask=None):
        B, T, C = x.shape
        D = C // self.h
        q = self.proj.query(x).view(B, T, self.h, D).transpose(1, 2)
        k = self.proj.key(context).view(B, -1, self.h, D).transpose(1, 2)
        v = self.proj.value(context).view(B, -1, self.h, D).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(D)
        if context_mask is not None:
            s = s.masked_fill(context_mask[:, None, None, :], float("-inf"))
        return (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
# bug-line: 45, 46
