# attnprep: mha
# expect: passed
"""Correct: q, k, v weights stacked in one (3, d_model, d_model) parameter (and a (3, d_model) bias),
einsum with the stack axis; o_proj a Linear."""
import math
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.W_qkv = nn.Parameter(torch.randn(3, d_model, d_model) / math.sqrt(d_model))
        self.b_qkv = nn.Parameter(torch.zeros(3, d_model))
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = (torch.einsum("btc,soc->sbto", x, self.W_qkv) + self.b_qkv[:, None, None, :]).unbind(0)
        sp = lambda t: t.view(B, T, self.h, -1).transpose(1, 2)
        q, k, v = sp(q), sp(k), sp(v)
        s = q @ k.transpose(-2, -1) / math.sqrt(C // self.h)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))
