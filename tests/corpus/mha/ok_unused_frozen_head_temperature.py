# attnprep: mha
# expect: passed
"""Correct: an extra per-head temperature kept as a frozen parameter (requires_grad=False) and not used; no gradient can reach it, and none is asked of it."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, use_rope=False):
        super().__init__()
        self.h = num_heads
        self.d = d_model // num_heads
        self.use_rope = use_rope
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        # a learnable per-head temperature, off unless asked for (not used here)
        self.head_temp = nn.Parameter(torch.ones(num_heads), requires_grad=False)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.d)
        mask = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            mask = mask & attention_mask[:, None, None, :]
        if is_causal:
            mask = mask & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        s = s.masked_fill(~mask, float("-inf"))
        p = self.drop(F.softmax(s, dim=-1))
        return self.o_proj((p @ v).transpose(1, 2).reshape(B, T, C))
