# attnprep: mha
# expect: passed
"""Correct: own argument names (mask, causal), and __call__ overridden to forward (a Keras habit)."""
import math
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, inputs, mask=None, causal=False):
        B, T, C = inputs.shape
        sp = lambda t: t.view(B, T, self.h, -1).transpose(1, 2)
        q, k, v = sp(self.q_proj(inputs)), sp(self.k_proj(inputs)), sp(self.v_proj(inputs))
        s = q @ k.transpose(-2, -1) / math.sqrt(C // self.h)
        if mask is not None:
            s = s.masked_fill(~mask[:, None, None, :], float("-inf"))
        if causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=inputs.device).triu(1), float("-inf"))
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))
