# attnprep: mha
# expect: passed
"""Correct: projections as nn.Conv1d(d_model, d_model, kernel_size=1) on (B, C, T) (a speech / TF habit)."""
import math
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.q_proj = nn.Conv1d(d_model, d_model, 1)
        self.k_proj = nn.Conv1d(d_model, d_model, 1)
        self.v_proj = nn.Conv1d(d_model, d_model, 1)
        self.o_proj = nn.Conv1d(d_model, d_model, 1)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        xc = x.transpose(1, 2)                                   # (B, C, T)
        sp = lambda t: t.view(B, self.h, C // self.h, T).transpose(2, 3)   # (B, H, T, D)
        q, k, v = sp(self.q_proj(xc)), sp(self.k_proj(xc)), sp(self.v_proj(xc))
        s = q @ k.transpose(-2, -1) / math.sqrt(C // self.h)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        y = (s.softmax(-1) @ v).transpose(2, 3).reshape(B, C, T)
        return self.o_proj(y).transpose(1, 2)
