# attnprep: qknorm
# expect: wrong_output
# diagnosis: qk_norm_on_v
"""A helper that splits and normalises every projection, v included."""
import math

import torch
import torch.nn as nn


class QKNormAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.n_heads = num_heads
        self.hd = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, d_model, bias=False)
        self.v_proj = nn.Linear(d_model, d_model, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.q_norm = nn.RMSNorm(self.hd, eps=1e-6)
        self.k_norm = nn.RMSNorm(self.hd, eps=1e-6)
        self.dropout = nn.Dropout(dropout)

    def heads(self, t, norm):
        B, T, C = t.shape
        return norm(t.view(B, T, self.n_heads, self.hd)).transpose(1, 2)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.heads(self.q_proj(x), self.q_norm)
        k = self.heads(self.k_proj(x), self.k_norm)
        v = self.heads(self.v_proj(x), self.k_norm)
        att = q @ k.transpose(-1, -2) / math.sqrt(self.hd)
        if attention_mask is not None:
            att = att.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            att = att.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        att = self.dropout(att.softmax(-1))
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(y)
# bug-line: 32
