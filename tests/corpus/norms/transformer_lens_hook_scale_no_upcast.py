# attnprep: norms
# expect: wrong_output
# diagnosis: norm_no_upcast
"""TransformerLens' norm habits: hook_scale and hook_normalized identity hooks, `scale` computed as
(x.pow(2).mean(-1, keepdim=True) + eps).sqrt() and divided out, w and b named as in its LayerNorm."""
import torch
import torch.nn as nn


class HookPoint(nn.Module):
    def forward(self, x):
        return x


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.hook_scale = HookPoint()
        self.hook_normalized = HookPoint()

    def forward(self, x):
        scale = self.hook_scale((x.pow(2).mean(-1, keepdim=True) + self.eps).sqrt())
        x = self.hook_normalized((x / scale).to(x.dtype))
        return x * self.weight


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.hook_scale = HookPoint()
        self.hook_normalized = HookPoint()

    def forward(self, x):
        h = x.float()
        h = h - h.mean(-1, keepdim=True)
        scale = self.hook_scale((h.pow(2).mean(-1, keepdim=True) + self.eps).sqrt())
        h = self.hook_normalized((h / scale).to(x.dtype))
        return h * self.weight + self.bias
# bug-line: 24
