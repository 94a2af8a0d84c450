# attnprep: norms
# expect: passed
"""The Annotated Transformer's parameter names (a_2, b_2) with the contract's math; the mean of
squares by einsum, the shape of any rank kept with keepdim."""

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.eps = eps

    def forward(self, x):
        h = x.to(torch.float32)
        ms = torch.einsum("...d,...d->...", h, h).unsqueeze(-1) / h.shape[-1]
        return self.a_2 * (h / torch.sqrt(ms + self.eps)).to(x.dtype)


class LayerNorm(nn.Module):
    "Construct a layernorm module (See citation for details)."

    def __init__(self, features, eps=1e-5):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        h = x.to(torch.float32)
        centred = h - h.mean(-1, keepdim=True)
        var = torch.einsum("...d,...d->...", centred, centred).unsqueeze(-1) / h.shape[-1]
        return self.a_2 * (centred / torch.sqrt(var + self.eps)).to(x.dtype) + self.b_2
