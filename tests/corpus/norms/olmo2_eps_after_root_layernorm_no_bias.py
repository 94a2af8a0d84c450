# attnprep: norms
# expect: wrong_output
# diagnosis: norm_eps_outside_sqrt + layernorm_bias_not_applied
"""OLMo-2's norm naming (Olmo2RMSNorm-like: variance_epsilon, hidden_states, input_dtype, the cast back
before the weight), a LayerNorm written the same way."""
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        rms = hidden_states.pow(2).mean(-1, keepdim=True).sqrt() + self.variance_epsilon
        hidden_states = hidden_states / rms
        return hidden_states.to(input_dtype) * self.weight


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        mean = hidden_states.mean(-1, keepdim=True)
        variance = (hidden_states - mean).pow(2).mean(-1, keepdim=True)
        hidden_states = (hidden_states - mean) * torch.rsqrt(variance + self.variance_epsilon)
        return hidden_states.to(input_dtype) * self.weight
# bug-line: 19, 37
