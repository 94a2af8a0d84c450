# attnprep: mha
# expect: passed
"""Correct: every projection wrapped in torch.nn.utils.parametrizations.spectral_norm (a GAN habit
carried over); the attention math is plain."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.parametrizations import spectral_norm


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.q_proj = spectral_norm(nn.Linear(d_model, d_model))
        self.k_proj = spectral_norm(nn.Linear(d_model, d_model))
        self.v_proj = spectral_norm(nn.Linear(d_model, d_model))
        self.o_proj = spectral_norm(nn.Linear(d_model, d_model))
        self.dropout = dropout

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H = self.num_heads
        q, k, v = (p(x).view(B, T, H, C // H).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(C // H))
        if is_causal:
            att = att.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), 1), float("-inf"))
        if attention_mask is not None:
            att = att.masked_fill(attention_mask[:, None, None, :] == 0, float("-inf"))
        att = F.dropout(F.softmax(att, dim=-1), self.dropout, self.training)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(y)
