# attnprep: mqa
# expect: mask_leak
# diagnosis: softmax_wrong_dim + padding_mask_inverted
"""A Fortran programmer's column-major thinking: one query per column, one key per column, the score
matrix S(j, i) with keys down the rows and queries across the columns, O = V·P."""
import math

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_dim)
        self.v_proj = nn.Linear(d_model, self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, D = self.num_heads, self.head_dim
        q = self.q_proj(x).view(B, T, H, D).permute(0, 2, 3, 1)  # (B, H, D, T): one query per column
        k = self.k_proj(x).transpose(1, 2)[:, None]  # (B, 1, D, T): one key per column
        v = self.v_proj(x).transpose(1, 2)[:, None]  # (B, 1, D, T)
        # S(j, i) = k(:, j) . q(:, i): keys down the rows, queries across the columns
        s = torch.matmul(k.transpose(-1, -2), q) / math.sqrt(D)  # (B, H, T_k, T_q)
        if is_causal:
            later = torch.ones(T, T, dtype=torch.bool, device=x.device).tril(-1)  # row j > column i
            s = s.masked_fill(later, float("-inf"))
        if attention_mask is not None:
            s = s.masked_fill(attention_mask[:, None, :, None], float("-inf"))
        p = torch.softmax(s, dim=-1)
        p = self.drop(p)
        o = torch.matmul(v, p)  # (B, H, D, T_q): column i is sum_j v(:, j) p(j, i)
        o = o.permute(0, 3, 1, 2).reshape(B, T, C)  # (B, T_q, H, D)
        return self.o_proj(o)
# bug-line: 35, 36
