# attnprep: cross_attention
# expect: passed
"""Interview-note style: the contract's names, -1e9 fill, returns (out, attn_weights)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CrossAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_context: int | None = None, dropout: float = 0.0):
        super().__init__()
        if d_context is None:
            d_context = d_model
        self.h = num_heads
        self.d_k = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attn_drop = nn.Dropout(dropout)

    def forward(self, x, context, context_mask=None):
        bsz, tgt_len, d_model = x.size()
        src_len = context.size(1)
        # decoder states ask, encoder states answer
        q = self.q_proj(x).reshape(bsz, tgt_len, self.h, self.d_k).permute(0, 2, 1, 3)
        k = self.k_proj(context).reshape(bsz, src_len, self.h, self.d_k).permute(0, 2, 1, 3)
        v = self.v_proj(context).reshape(bsz, src_len, self.h, self.d_k).permute(0, 2, 1, 3)
        attn_weights = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.d_k)  # (bsz, h, tgt, src)
        if context_mask is not None:
            attn_weights = attn_weights.masked_fill(~context_mask.unsqueeze(1).unsqueeze(2), -1e9)
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_weights = self.attn_drop(attn_weights)
        out = torch.matmul(attn_weights, v).permute(0, 2, 1, 3).reshape(bsz, tgt_len, d_model)
        return self.o_proj(out), attn_weights
