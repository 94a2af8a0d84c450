# attnprep: norms
# expect: wrong_output
# diagnosis: norm_rsqrt_inverted + norm_eps_ignored
"""`__getattr__` delegation: both modules forward unknown attributes to a shared `_Stats` helper
object (`self.rms(x)`, `self.centred(x)` resolve there), built with its own eps. Two slips: the
helper's eps is the literal 1e-5 (the modules' eps argument never reaches it), and RMSNorm
multiplies by the root mean square instead of dividing by it."""

import torch
import torch.nn as nn


class _Stats:
    eps = 1e-5

    def rms(self, h):
        return torch.sqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)

    def centred(self, h):
        c = h - h.mean(-1, keepdim=True)
        return c, torch.sqrt(c.pow(2).mean(-1, keepdim=True) + self.eps)


class _Delegating(nn.Module):
    _stats = _Stats()

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._stats, name)


class RMSNorm(_Delegating):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return (h * self.rms(h)).to(x.dtype) * self.weight


class LayerNorm(_Delegating):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        c, sd = self.centred(x.float())
        return (c / sd).to(x.dtype) * self.weight + self.bias
# bug-line: 14, 42
