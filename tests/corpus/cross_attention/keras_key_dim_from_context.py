# attnprep: cross_attention
# expect: wrong_output
# diagnosis: cross_scale_d_context
"""A Keras MultiHeadAttention(query, value, key) port: the query and value/key widths passed like
Keras' `query_shape` / `value_shape`, tf.einsum equations kept as torch.einsum, and the scale taken
from the value's (context's) width, math.sqrt(value_dim), instead of one head's width."""

import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        self._value_dim = d_context or d_model
        self._num_heads, self._key_dim = num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(self._value_dim, d_model)
        self.v_proj = nn.Linear(self._value_dim, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self._dropout = nn.Dropout(dropout)

    def forward(self, x, context, context_mask=None):
        B, T, _ = x.shape
        S = context.shape[1]
        query = self.q_proj(x).view(B, T, self._num_heads, self._key_dim)
        key = self.k_proj(context).view(B, S, self._num_heads, self._key_dim)
        value = self.v_proj(context).view(B, S, self._num_heads, self._key_dim)
        query = query * (1.0 / math.sqrt(float(self._value_dim)))
        scores = torch.einsum("aecd,abcd->acbe", key, query)  # (B, N, T, S)
        if context_mask is not None:
            scores = scores.masked_fill(~context_mask[:, None, None, :], -1e9)
        probs = self._dropout(torch.softmax(scores, dim=-1))
        out = torch.einsum("acbe,aecd->abcd", probs, value)
        return self.o_proj(out.reshape(B, T, -1))
# bug-line: 31
