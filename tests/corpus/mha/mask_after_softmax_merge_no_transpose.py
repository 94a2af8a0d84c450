# attnprep: mha
# expect: mask_leak
# diagnosis: mask_after_softmax + merge_heads_no_transpose
"""Masks zero the probabilities after the softmax (no renormalisation), and the heads are merged with
reshape(B, T, C) straight from (B, H, T, D)."""
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

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = (p(x).view(B, T, self.h, self.d).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.d), dim=-1)
        if attention_mask is not None:
            p = p * attention_mask[:, None, None, :]
        if is_causal:
            p = p * torch.ones(T, T, device=x.device).tril()
        return self.o_proj((p @ v).reshape(B, T, C))
