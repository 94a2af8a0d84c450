# attnprep: gqa
# expect: mask_leak
# diagnosis: gqa_heads_tiled + causal_masks_diagonal
"""KV heads tiled with expand + reshape in the wrong order (h % KV instead of h // group), and the causal
mask strict (triu(diagonal=0): each token cannot see itself), finfo.min fills."""

import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.h, self.kv = num_heads, num_kv_heads
        self.d = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        g = self.h // self.kv
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv, self.d).transpose(1, 2)
        k = k[:, None].expand(B, g, self.kv, T, self.d).reshape(B, self.h, T, self.d)
        v = v[:, None].expand(B, g, self.kv, T, self.d).reshape(B, self.h, T, self.d)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        low = torch.finfo(s.dtype).min
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], low)
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(), low)
        o = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(o)
