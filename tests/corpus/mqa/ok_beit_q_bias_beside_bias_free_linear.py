# attnprep: mqa
# expect: passed
"""Correct: BEiT / Swin-v2 habit: q_proj = nn.Linear(bias=False) with q_bias kept beside it, bare k/v
matrices with their biases, q scaled before the product."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        D = d_model // num_heads
        self.H, self.D = num_heads, D
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.q_bias = nn.Parameter(torch.zeros(d_model))
        self.k_weight = nn.Parameter(torch.randn(D, d_model) * 0.02)
        self.k_bias = nn.Parameter(torch.zeros(D))
        self.v_weight = nn.Parameter(torch.randn(D, d_model) * 0.02)
        self.v_bias = nn.Parameter(torch.zeros(D))
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = (self.q_proj(x) + self.q_bias) / math.sqrt(self.D)
        q = q.view(B, T, self.H, self.D).transpose(1, 2)
        k = F.linear(x, self.k_weight, self.k_bias)[:, None]
        v = F.linear(x, self.v_weight, self.v_bias)[:, None]
        s = q @ k.transpose(-2, -1)
        m = torch.zeros(B, 1, T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            m |= torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        if attention_mask is not None:
            m |= ~attention_mask[:, None, None, :]
        s = s.masked_fill(m, float("-inf"))
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))
