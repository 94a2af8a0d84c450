# attnprep: mha
# expect: mask_leak
# diagnosis: causal_masks_diagonal
"""OpenNMT-py's MultiHeadedAttention: `linear_query` / `linear_keys` / `linear_values` /
`final_linear` kept under the contract's names, `shape()` / `unshape()`, `query /= sqrt(dim_per_head)`,
a padding `mask` of True-is-pad and the decoder's `future_mask` OR-ed into it. The future mask is
built with triu_(0), which blocks the diagonal as well (each query loses its own key)."""

import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.head_count = num_heads
        self.dim_per_head = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        batch_size, T, _ = x.size()

        def shape(t):
            return t.view(batch_size, -1, self.head_count, self.dim_per_head).transpose(1, 2)

        def unshape(t):
            return t.transpose(1, 2).contiguous().view(batch_size, -1, self.head_count * self.dim_per_head)

        query, key, value = shape(self.q_proj(x)), shape(self.k_proj(x)), shape(self.v_proj(x))
        query = query / math.sqrt(self.dim_per_head)
        scores = torch.matmul(query, key.transpose(2, 3))
        mask = torch.zeros(batch_size, 1, 1, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            mask = ~attention_mask.view(batch_size, 1, 1, T)
        if is_causal:
            future_mask = torch.ones(T, T, dtype=torch.uint8, device=x.device).triu_(0).bool()
            mask = mask | future_mask
        scores = scores.masked_fill(mask, -1e18)
        attn = self.dropout(torch.softmax(scores, dim=-1))
        return self.o_proj(unshape(torch.matmul(attn, value)))
# bug-line: 42
