# attnprep: mha
# expect: passed
"""Correct: bare (in, out) matrices used as x @ W + b with whiteboard names (A, B, C for q, k, v, P for the output) and their biases a, b, c, p made after them: no name pairs a bias with its matrix, the order does."""
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    """Weights stored (in, out) and used as x @ W + b, names from a whiteboard: A, B, C for q, k, v, P for the output."""

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.nh = num_heads
        s = d_model ** -0.5
        self.A = nn.Parameter(torch.randn(d_model, d_model) * s)
        self.B = nn.Parameter(torch.randn(d_model, d_model) * s)
        self.C = nn.Parameter(torch.randn(d_model, d_model) * s)
        self.P = nn.Parameter(torch.randn(d_model, d_model) * s)
        self.a = nn.Parameter(torch.zeros(d_model))
        self.b = nn.Parameter(torch.zeros(d_model))
        self.c = nn.Parameter(torch.zeros(d_model))
        self.p = nn.Parameter(torch.zeros(d_model))

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, D = self.nh, C // self.nh
        q = (x @ self.A + self.a).view(B, T, H, D).transpose(1, 2)
        k = (x @ self.B + self.b).view(B, T, H, D).transpose(1, 2)
        v = (x @ self.C + self.c).view(B, T, H, D).transpose(1, 2)
        w = q @ k.transpose(-1, -2) / math.sqrt(D)
        if attention_mask is not None:
            w = w.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            w = w.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        y = (w.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        return y @ self.P + self.p
