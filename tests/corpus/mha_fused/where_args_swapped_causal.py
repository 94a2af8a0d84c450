# attnprep: mha_fused
# expect: mask_leak
# diagnosis: causal_inverted
"""torch.where(tril, -inf, scores): the arguments of where swapped, so the past is masked and the future kept."""

import math

import torch
import torch.nn as nn


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H = self.num_heads
        q, k, v = self.qkv_proj(x).split(C, dim=-1)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        att = q @ k.transpose(-2, -1) / math.sqrt(C // H)
        if is_causal:
            tril = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
            att = torch.where(tril, float("-inf"), att)
        if attention_mask is not None:
            att = torch.where(attention_mask[:, None, None, :], att, float("-inf"))
        att = self.dropout(att.softmax(-1))
        return self.o_proj((att @ v).transpose(1, 2).reshape(B, T, C))
# bug-line: 28
