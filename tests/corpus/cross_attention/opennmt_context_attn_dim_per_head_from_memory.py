# attnprep: cross_attention
# expect: wrong_output
# diagnosis: cross_scale_d_context
"""OpenNMT-py's context attention (the decoder's `context_attn`): `linear_keys` / `linear_values`
fed the encoder's `memory_bank`, `linear_query`, `final_linear`, `shape()` / `unshape()` closures,
`query = query / math.sqrt(dim_per_head)` before the matmul, `mask` given as padding positions.
Here dim_per_head for the scale is computed from the memory's width, d_context // heads."""

import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_context or d_model
        self.head_count = num_heads
        self.model_dim = d_model
        self.memory_dim_per_head = d_context // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, context, context_mask=None):
        batch_size = x.size(0)
        head_count = self.head_count
        dim_per_head = self.model_dim // head_count

        def shape(t):
            return t.view(batch_size, -1, head_count, dim_per_head).transpose(1, 2)

        def unshape(t):
            return t.transpose(1, 2).contiguous().view(batch_size, -1, head_count * dim_per_head)

        key = shape(self.k_proj(context))
        value = shape(self.v_proj(context))
        query = shape(self.q_proj(x))
        query = query / math.sqrt(self.memory_dim_per_head)
        scores = torch.matmul(query, key.transpose(2, 3))
        if context_mask is not None:
            mask = (~context_mask).unsqueeze(1).unsqueeze(1)  # [B, 1, 1, src_len], True = pad
            scores = scores.masked_fill(mask, -1e18)
        attn = self.dropout(torch.softmax(scores, dim=-1))
        return self.o_proj(unshape(torch.matmul(attn, value)))
# bug-line: 42
