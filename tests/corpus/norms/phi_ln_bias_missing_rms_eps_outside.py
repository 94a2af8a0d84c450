# attnprep: norms
# expect: wrong_output
# diagnosis: norm_eps_outside_sqrt + layernorm_bias_not_applied
"""Phi-style pair of norms with two unrelated mistakes: RMSNorm adds eps outside the square root (x / (rms + eps)) AND LayerNorm never adds its bias."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.variance_epsilon = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        rms = hidden_states.pow(2).mean(-1, keepdim=True).sqrt()
        hidden_states = hidden_states / (rms + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        input_dtype = hidden_states.dtype
        h = hidden_states.to(torch.float32)
        mean = h.mean(-1, keepdim=True)
        variance = (h - mean).pow(2).mean(-1, keepdim=True)
        h = (h - mean) * torch.rsqrt(variance + self.eps)
        return self.weight * h.to(input_dtype)
# bug-line: 20, 37
