# attnprep: cross_attention
# expect: mask_leak
# diagnosis: padding_mask_inverted
"""torch.nn.Transformer's naming in a decoder's cross-attention: the context's mask becomes
`memory_key_padding_mask` (in nn.Transformer, True marks a padded memory position, which the fill
blocks), the heads split with unflatten / flatten, the scale folded into the queries."""
import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_model if d_context is None else d_context
        self.nhead = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, context, context_mask=None):
        tgt, memory = x, context
        memory_key_padding_mask = context_mask
        head_dim = tgt.size(-1) // self.nhead
        q = self.q_proj(tgt).unflatten(-1, (self.nhead, head_dim)).transpose(1, 2) / math.sqrt(head_dim)
        k = self.k_proj(memory).unflatten(-1, (self.nhead, head_dim)).transpose(1, 2)
        v = self.v_proj(memory).unflatten(-1, (self.nhead, head_dim)).transpose(1, 2)
        attn_output_weights = q @ k.transpose(-2, -1)                     # (B, nhead, T, S)
        if memory_key_padding_mask is not None:
            blocked = memory_key_padding_mask[:, None, None, :]
            attn_output_weights = attn_output_weights.masked_fill(blocked, float("-inf"))
        attn_output_weights = self.dropout(attn_output_weights.softmax(dim=-1))
        out = (attn_output_weights @ v).transpose(1, 2).flatten(2)
        return self.o_proj(out)
# bug-line: 26
