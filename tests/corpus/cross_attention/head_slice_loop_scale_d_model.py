# attnprep: cross_attention
# expect: wrong_output
# diagnosis: scale_d_model
"""Cross-attention with a per-head slice loop over merged projections; the scale is over d_model."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_model if d_context is None else d_context
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, context, context_mask=None):
        D = self.head_dim
        q = self.q_proj(x)
        k = self.k_proj(context)
        v = self.v_proj(context)
        outs = []
        for h in range(self.num_heads):
            cols = slice(h * D, (h + 1) * D)
            qh, kh, vh = q[..., cols], k[..., cols], v[..., cols]
            scores = torch.matmul(qh, kh.transpose(1, 2)) / math.sqrt(self.d_model)
            if context_mask is not None:
                scores = scores.masked_fill(~context_mask.unsqueeze(1), float("-inf"))
            attn = self.dropout(F.softmax(scores, dim=-1))
            outs.append(torch.matmul(attn, vh))
        return self.o_proj(torch.cat(outs, dim=-1))
# bug-line: 35
