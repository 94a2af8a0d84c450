# attnprep: mha
# expect: wrong_output
# diagnosis: softmax_wrong_dim
"""numpy habits kept in torch: `axis=` keywords (torch.softmax, Tensor.sum in a debug check),
swapaxes, np-style masks built with torch.where. The softmax is taken with axis=-2: over the
queries of each key column instead of over the keys of each query row."""

import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h, self.d = num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = (p(x).reshape(B, T, self.h, self.d).swapaxes(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        scores = q @ k.swapaxes(-1, -2) / math.sqrt(self.d)
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep.tril()
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        scores = torch.where(keep, scores, -1e9)
        probs = torch.softmax(scores, axis=-2)
        y = self.dropout(probs) @ v
        return self.o_proj(y.swapaxes(1, 2).reshape(B, T, C))
# bug-line: 34
