# attnprep: mqa
# expect: mask_leak
# diagnosis: padding_mask_inverted
"""The single K/V head kept as (B, 1, T, D) and broadcast, the query heads made with
tensor_split(num_heads, dim=-1) and stacked, the padding mask turned additive by
`attention_mask.float() * -1e9`: that puts -1e9 on the real tokens, inverted."""

import math

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h, self.d = num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.d)
        self.v_proj = nn.Linear(d_model, self.d)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = torch.stack(self.q_proj(x).tensor_split(self.h, dim=-1), dim=1)  # (B, H, T, D)
        k = self.k_proj(x).unsqueeze(1)  # (B, 1, T, D)
        v = self.v_proj(x).unsqueeze(1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.d)
        if attention_mask is not None:
            s = s + attention_mask.float()[:, None, None, :] * -1e9
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), -1e9)
        y = self.drop(s.softmax(-1)) @ v  # (B, H, T, D)
        return self.o_proj(torch.cat(y.unbind(1), dim=-1))
# bug-line: 31
