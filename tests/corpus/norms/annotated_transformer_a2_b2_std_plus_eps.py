# attnprep: norms
# expect: wrong_output
# diagnosis: layernorm_unbiased_std_eps
"""The Annotated Transformer's LayerNorm ("Construct a layernorm module (See citation for details)"),
its a_2 / b_2 renamed weight / bias for the contract: `mean = x.mean(-1, keepdim=True); std =
x.std(-1, keepdim=True)` and `a_2 * (x - mean) / (std + eps) + b_2`, here with an upcast. RMSNorm
beside it in the T5LayerNorm way, right. LayerNorm's std is torch's unbiased one and eps is added
to it outside the root."""

import torch
import torch.nn as nn


class LayerNorm(nn.Module):
    "Construct a layernorm module (See citation for details)."

    def __init__(self, dim, eps=1e-5):
        super(LayerNorm, self).__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, x):
        h = x.float()
        mean = h.mean(-1, keepdim=True)
        std = h.std(-1, keepdim=True)
        y = (h - mean) / (std + self.eps)
        return self.weight * y.to(x.dtype) + self.bias


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        """Construct a layernorm module in the T5 style. No bias and no subtraction of mean."""
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states.to(torch.float32) * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)
# bug-line: 26, 27
