# attnprep: mha_fused
# expect: passed
"""Correct, beginner interview style: split q/k/v, then a Python loop over heads slicing columns h*D:(h+1)*D, torch.cat of the heads."""

import math

import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        D = C // self.num_heads
        qkv = self.qkv_proj(x)
        q, k, v = qkv[..., :C], qkv[..., C:2 * C], qkv[..., 2 * C:]
        mask = torch.zeros(B, T, T, device=x.device)
        if is_causal:
            mask = mask.masked_fill(torch.triu(torch.ones(T, T, device=x.device), 1).bool(), float("-inf"))
        if attention_mask is not None:
            mask = mask.masked_fill(~attention_mask.unsqueeze(1), float("-inf"))
        heads = []
        for h in range(self.num_heads):
            qh, kh, vh = q[..., h * D:(h + 1) * D], k[..., h * D:(h + 1) * D], v[..., h * D:(h + 1) * D]
            s = torch.bmm(qh, kh.transpose(1, 2)) / math.sqrt(D) + mask
            heads.append(torch.bmm(self.dropout(torch.softmax(s, dim=-1)), vh))
        return self.o_proj(torch.cat(heads, dim=-1))
