# attnprep: mha
# expect: passed
"""Correct: the weights left unnormalised until after the values, exp(s - max) @ v / rowsum (FlashAttention's order); no tensor of it sums to 1 over the keys."""
import math
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    """Softmax left unnormalised until after the values (as FlashAttention divides once at the end)."""

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        D = C // self.h
        q, k, v = (p(x).view(B, T, self.h, D).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        s = q @ k.transpose(-2, -1) / math.sqrt(D)
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        e = torch.exp(s - s.amax(-1, keepdim=True))
        out = (e @ v) / e.sum(-1, keepdim=True)
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C))
