# attnprep: gqa
# expect: mask_leak
# diagnosis: scale_inverted + padding_mask_ignored
"""A Dart programmer's cascades (`..`): a small builder whose setters return self, chained to set
the scale, the masks and the head grouping before `.build()` runs the attention; the scale set as
sqrt(head_dim) (multiplied), and the padding mask stored under a name build() never reads."""
import math

import torch
import torch.nn as nn


class _AttentionBuilder:
    def __init__(self, q, k, v):
        self.q, self.k, self.v = q, k, v
        self.scale = 1.0
        self.key_mask = None
        self.padding = None
        self.causal = False
        self.groups = 1

    def withScale(self, s):
        self.scale = s
        return self

    def withPadding(self, mask):
        self.padding = mask
        return self

    def withCausal(self, flag):
        self.causal = flag
        return self

    def withGroups(self, g):
        self.groups = g
        return self

    def build(self):
        k = self.k.repeat_interleave(self.groups, dim=1)
        v = self.v.repeat_interleave(self.groups, dim=1)
        s = (self.q @ k.transpose(-2, -1)) * self.scale
        if self.key_mask is not None:
            s = s.masked_fill(~self.key_mask[:, None, None, :], float("-inf"))
        if self.causal:
            n = s.shape[-1]
            s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
        return s.softmax(-1) @ v


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.h, self.kvh, self.hd = num_heads, num_kv_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kvh, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kvh, self.hd).transpose(1, 2)
        builder = _AttentionBuilder(q, k, v)
        builder.withScale(math.sqrt(self.hd)).withGroups(self.h // self.kvh)
        builder.withPadding(attention_mask).withCausal(is_causal)
        y = builder.build()
        return self.o_proj(y.transpose(1, 2).reshape(B, T, C))
# bug-line: 27, 65
