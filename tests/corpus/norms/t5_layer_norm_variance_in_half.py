# attnprep: norms
# expect: wrong_output
# diagnosis: norm_no_upcast
"""Hugging Face T5LayerNorm (modeling_t5.py) for RMSNorm, with its comment on half precision, but the
variance taken from hidden_states as they come (no .to(torch.float32)), so bfloat16 / float16
inputs are squared and averaged in half precision; float32 is right. LayerNorm beside it with an
explicit float32 upcast, right."""

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        """
        Construct a layernorm module in the T5 style. No bias and no subtraction of mean.
        """
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        # T5 uses a layer_norm which only scales and doesn't shift, which is also known as Root Mean
        # Square Layer Normalization https://arxiv.org/abs/1910.07467 thus varience is calculated
        # w/o mean and there is no bias. Additionally we want to make sure that the accumulation for
        # half-precision inputs is done in fp32

        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)

        # convert into half-precision if necessary
        if self.weight.dtype in [torch.float16, torch.bfloat16]:
            hidden_states = hidden_states.to(self.weight.dtype)

        return self.weight * hidden_states


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, x):
        h = x.to(torch.float32)
        mu = h.mean(dim=-1, keepdim=True)
        var = (h - mu).pow(2).mean(dim=-1, keepdim=True)
        y = (h - mu) * torch.rsqrt(var + self.eps)
        return y.to(x.dtype) * self.weight + self.bias
# bug-line: 28, 29
