# attnprep: lora
# expect: passed
"""Bare nn.Parameter matrices A (r, in), B (out, r) and x @ A.T @ B.T, the base as W / b
parameters with requires_grad=False; merged() through torch.no_grad and .data."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r, alpha):
        super().__init__()
        self.W = nn.Parameter(torch.empty(out_features, in_features), requires_grad=False)
        self.b = nn.Parameter(torch.zeros(out_features), requires_grad=False)
        nn.init.kaiming_uniform_(self.W, a=math.sqrt(5))
        self.A = nn.Parameter(torch.randn(r, in_features) / math.sqrt(in_features))
        self.B = nn.Parameter(torch.zeros(out_features, r))
        self.scale = alpha / r

    def forward(self, x):
        return F.linear(x, self.W, self.b) + (x @ self.A.T @ self.B.T) * self.scale

    def merged(self):
        out_features, in_features = self.W.shape
        layer = nn.Linear(in_features, out_features, dtype=self.W.dtype)
        with torch.no_grad():
            layer.weight.data = self.W + self.scale * (self.B @ self.A)
            layer.bias.data = self.b.clone()
        return layer
