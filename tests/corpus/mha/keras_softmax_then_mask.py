# attnprep: mha
# expect: mask_leak
# diagnosis: mask_after_softmax
"""Keras-port habits (tf.einsum strings, `axis=`), but the softmax layer is called first and the
keep-mask multiplied in afterwards, as a hand-rolled tf.keras port sometimes does: the rows no longer
sum to one over the allowed keys."""

import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads, self.key_dim = num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def call(self, x, attention_mask, is_causal):
        B, T, _ = x.shape
        q = self.q_proj(x).reshape(B, T, self.num_heads, self.key_dim)
        k = self.k_proj(x).reshape(B, T, self.num_heads, self.key_dim)
        v = self.v_proj(x).reshape(B, T, self.num_heads, self.key_dim)
        scores = torch.einsum("BTNH,BSNH->BNTS", q, k) / math.sqrt(self.key_dim)
        keep = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        if is_causal:
            keep = keep & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        probs = torch.softmax(scores, dim=-1) * keep
        probs = self.dropout(probs)
        out = torch.einsum("BNTS,BSNH->BTNH", probs, v)
        return self.o_proj(out.reshape(B, T, -1))

    def forward(self, x, attention_mask=None, is_causal=False):
        return self.call(x, attention_mask, is_causal)
# bug-line: 35
