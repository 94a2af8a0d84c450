# attnprep: cross_attention
# expect: mask_leak
# diagnosis: padding_mask_inverted + scale_d_model
"""Segment Anything's Attention block (used by its TwoWayTransformer for token-to-image attention):
q_proj / k_proj / v_proj / out_proj, internal_dim, _separate_heads / _recombine_heads, the scale from
the channel count `c_per_head` as SAM computes it, a key padding mask added for prompts."""
import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        self.embedding_dim = d_model
        self.internal_dim = d_model
        self.num_heads = num_heads
        kv_in_dim = d_context or d_model
        self.q_proj = nn.Linear(d_model, self.internal_dim)
        self.k_proj = nn.Linear(kv_in_dim, self.internal_dim)
        self.v_proj = nn.Linear(kv_in_dim, self.internal_dim)
        self.out_proj = nn.Linear(self.internal_dim, d_model)
        self.dropout_p = dropout

    def _separate_heads(self, x, num_heads):
        b, n, c = x.shape
        x = x.reshape(b, n, num_heads, c // num_heads)
        return x.transpose(1, 2)  # B x N_heads x N_tokens x C_per_head

    def _recombine_heads(self, x):
        b, n_heads, n_tokens, c_per_head = x.shape
        x = x.transpose(1, 2)
        return x.reshape(b, n_tokens, n_heads * c_per_head)  # B x N_tokens x C

    def forward(self, x, context, context_mask=None):
        q = self._separate_heads(self.q_proj(x), self.num_heads)
        k = self._separate_heads(self.k_proj(context), self.num_heads)
        v = self._separate_heads(self.v_proj(context), self.num_heads)
        _, _, _, c_per_head = q.shape
        attn = q @ k.permute(0, 1, 3, 2)  # B x N_heads x N_tokens x N_tokens
        attn = attn / math.sqrt(self.internal_dim)
        if context_mask is not None:
            attn = attn.masked_fill(context_mask[:, None, None, :], float("-inf"))
        attn = torch.softmax(attn, dim=-1)
        attn = nn.functional.dropout(attn, self.dropout_p, self.training)
        out = self._recombine_heads(attn @ v)
        return self.out_proj(out)
# bug-line: 42, 44
