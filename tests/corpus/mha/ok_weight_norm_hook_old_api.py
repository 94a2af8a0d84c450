# attnprep: mha
# expect: passed
"""Correct: q/k/v projections wrapped in the older torch.nn.utils.weight_norm hook (weight_g, weight_v), o_proj too."""
import math
import torch
import torch.nn as nn
from torch.nn.utils import weight_norm  # the older hook form: weight_g, weight_v


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.dk = d_model // num_heads
        self.q_proj = weight_norm(nn.Linear(d_model, d_model))
        self.k_proj = weight_norm(nn.Linear(d_model, d_model))
        self.v_proj = weight_norm(nn.Linear(d_model, d_model))
        self.o_proj = weight_norm(nn.Linear(d_model, d_model), dim=None)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).reshape(B, T, self.h, self.dk).permute(0, 2, 1, 3)
        k = self.k_proj(x).reshape(B, T, self.h, self.dk).permute(0, 2, 3, 1)  # (B, H, D, T)
        v = self.v_proj(x).reshape(B, T, self.h, self.dk).permute(0, 2, 1, 3)
        s = torch.matmul(q, k) / math.sqrt(self.dk)
        if is_causal:
            r, c = torch.triu_indices(T, T, offset=1, device=x.device)
            s = s.clone()
            s[..., r, c] = float("-inf")
        if attention_mask is not None:
            s = s.masked_fill(attention_mask[:, None, None, :].logical_not(), float("-inf"))
        p = self.drop(torch.softmax(s, -1))
        o = torch.matmul(p, v).permute(0, 2, 1, 3).reshape(B, T, C)
        return self.o_proj(o)
