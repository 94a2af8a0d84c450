# attnprep: mha
# expect: passed
"""A Keras / TF-2 MultiHeadAttention ported line by line: tf.einsum's "BTNH" habits kept as
torch.einsum, `axis=` read as dim, the mask added as (1 - mask) * -1e9 like Keras' _masked_softmax,
heads never transposed (the einsum strings carry the layout): correct."""

import math

import torch
import torch.nn as nn


def _masked_softmax(scores, keep, axis=-1):
    # keras.layers.Softmax(axis=-1)(scores, mask): adder = (1 - mask) * large negative
    if keep is not None:
        adder = (1.0 - keep.to(scores.dtype)) * -1e9
        scores = scores + adder
    return torch.softmax(scores, dim=axis)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self._num_heads = num_heads
        self._key_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self._dropout_layer = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        N, Hd = self._num_heads, self._key_dim
        query = self.q_proj(x).reshape(B, T, N, Hd)  # "BTNH"
        key = self.k_proj(x).reshape(B, T, N, Hd)
        value = self.v_proj(x).reshape(B, T, N, Hd)
        query = query * (1.0 / math.sqrt(float(Hd)))
        attention_scores = torch.einsum("BSNH,BTNH->BNTS", key, query)
        keep = None
        if attention_mask is not None:
            keep = attention_mask[:, None, None, :]  # (B, 1, 1, S)
        if is_causal:
            tri = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            keep = tri if keep is None else (keep & tri)
        attention_scores = _masked_softmax(attention_scores, keep, axis=-1)
        attention_scores = self._dropout_layer(attention_scores)
        attention_output = torch.einsum("BNTS,BSNH->BTNH", attention_scores, value)
        return self.o_proj(attention_output.reshape(B, T, N * Hd))
