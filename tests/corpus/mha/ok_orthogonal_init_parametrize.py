# attnprep: mha
# expect: passed
"""Correct: the query and key projections kept orthogonal with torch.nn.utils.parametrizations.orthogonal
(a stability trick from some research code); their biases stay plain parameters."""
import math
import torch
import torch.nn as nn
from torch.nn.utils.parametrizations import orthogonal


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.q_proj = orthogonal(nn.Linear(d_model, d_model))
        self.k_proj = orthogonal(nn.Linear(d_model, d_model))
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H = self.num_heads
        q = self.q_proj(x).view(B, T, H, -1).transpose(1, 2)
        k = self.k_proj(x).view(B, T, H, -1).transpose(1, 2)
        v = self.v_proj(x).view(B, T, H, -1).transpose(1, 2)
        s = q @ k.transpose(-2, -1) / math.sqrt(C // H)
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        return self.o_proj((self.dropout(s.softmax(-1)) @ v).transpose(1, 2).reshape(B, T, C))
