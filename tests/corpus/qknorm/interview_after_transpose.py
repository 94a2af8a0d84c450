# attnprep: qknorm
# expect: passed
"""Interview style: the norm as a helper on (B, H, T, D) after the transpose, one additive mask."""
import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.g = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        rms = torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)
        return x / rms * self.g


class QKNormAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.n_heads = num_heads
        self.hd = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, d_model, bias=False)
        self.v_proj = nn.Linear(d_model, d_model, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.q_norm = RMSNorm(self.hd)
        self.k_norm = RMSNorm(self.hd)
        self.dropout = nn.Dropout(dropout)

    def split(self, t):
        B, T, C = t.shape
        return t.view(B, T, self.n_heads, self.hd).permute(0, 2, 1, 3)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_norm(self.split(self.q_proj(x)))
        k = self.k_norm(self.split(self.k_proj(x)))
        v = self.split(self.v_proj(x))
        bias = torch.zeros(B, 1, T, T, device=x.device, dtype=x.dtype)
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            bias = bias + torch.full((T, T), float("-inf"), device=x.device, dtype=x.dtype).triu(1)
        att = q @ k.transpose(-1, -2) / math.sqrt(self.hd) + bias
        att = self.dropout(torch.softmax(att, dim=-1))
        y = (att @ v).permute(0, 2, 1, 3).reshape(B, T, C)
        return self.o_proj(y)
