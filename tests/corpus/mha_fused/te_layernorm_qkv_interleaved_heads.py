# attnprep: mha_fused
# expect: wrong_output
# diagnosis: fused_qkv_layout
"""TransformerEngine's fused-QKV habits (qkv_weight_interleaved=True is its default): the fused
output read as (B, T, H, 3, D), each head's [q; k; v] together, and split with unbind on the 3
axis. The contract's qkv_proj is laid out [q; k; v] with the heads inside each, so every head reads
the wrong rows."""

import math

import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h, self.d = num_heads, d_model // num_heads
        self.qkv_weight_interleaved = True
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        mixed = self.qkv_proj(x)
        q, k, v = mixed.view(B, T, self.h, 3, self.d).unbind(dim=3)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (B, H, T, D)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.d)
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep.tril()
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        s = s.masked_fill(~keep, float("-inf"))
        y = (self.drop(s.softmax(-1)) @ v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(y)
# bug-line: 27
