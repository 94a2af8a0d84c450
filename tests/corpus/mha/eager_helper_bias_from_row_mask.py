# attnprep: mha
# expect: mask_leak
# diagnosis: padding_mask_on_queries
"""A module-level eager attention helper (query, key, value, attn_mask, scale) that turns a bool
mask into an additive bias itself, as torch's documented SDPA reference does; forward prepares the
4-d mask and calls it."""
import math

import torch
import torch.nn as nn


def eager_attention(query, key, value, attn_mask=None, causal=False, scale=None):
    L, S = query.size(-2), key.size(-2)
    scale = scale if scale is not None else 1.0 / math.sqrt(query.size(-1))
    attn_bias = torch.zeros(L, S, dtype=query.dtype, device=query.device)
    if causal:
        attn_bias = attn_bias.masked_fill(torch.ones(L, S, dtype=torch.bool, device=query.device).tril().logical_not(), float("-inf"))
    if attn_mask is not None:
        attn_bias = attn_bias.masked_fill(attn_mask.logical_not(), float("-inf"))
    weights = torch.softmax(query @ key.transpose(-2, -1) * scale + attn_bias, dim=-1)
    return weights @ value


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.n_heads, self.d_head = num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = (proj(x).view(B, T, self.n_heads, self.d_head).transpose(1, 2)
                   for proj in (self.q_proj, self.k_proj, self.v_proj))
        mask = None
        if attention_mask is not None:
            mask = attention_mask.reshape(B, 1, T, 1)
        out = eager_attention(q, k, v, attn_mask=mask, causal=is_causal)
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C))
# bug-line: 40
