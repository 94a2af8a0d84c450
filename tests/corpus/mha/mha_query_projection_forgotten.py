# attnprep: mha
# expect: wrong_output
"""Interview whiteboard MHA: the keys and values are projected, the queries are x split into heads."""

import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.d_k = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = x.view(B, T, self.h, self.d_k).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.h, self.d_k).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.h, self.d_k).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.d_k))
        if attention_mask is not None:
            att = att.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            att = att.masked_fill(~causal, float("-inf"))
        att = self.drop(att.softmax(dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.o_proj(y)
# bug-line: 24
