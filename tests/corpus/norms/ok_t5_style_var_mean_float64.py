# attnprep: norms
# expect: passed
"""Correct: T5LayerNorm's RMSNorm (cast to the weight's dtype when half, weight times x); LayerNorm from torch.var_mean(correction=0) in float64, cast back, then scaled (中文注释)."""
import torch
from torch import nn


class RMSNorm(nn.Module):
    """T5LayerNorm-style: variance in float32, cast to the weight's dtype when it is half, then scale."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states.to(torch.float32) * torch.rsqrt(variance + self.variance_epsilon)
        if self.weight.dtype in [torch.float16, torch.bfloat16]:
            hidden_states = hidden_states.to(self.weight.dtype)
        return (self.weight * hidden_states).to(input_dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        # 统计量用 float64 算，再转回输入的 dtype
        var, mean = torch.var_mean(x.double(), dim=-1, keepdim=True, correction=0)
        y = ((x.double() - mean) / torch.sqrt(var + self.eps)).to(x.dtype)
        return y * self.weight + self.bias
