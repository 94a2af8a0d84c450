# attnprep: norms
# expect: wrong_output
# diagnosis: norm_wrong_dim
"""Hydra / OmegaConf habits without the library: the defaults of every layer in one nested dict at the
top of the file (what a conf/model/norms.yaml would hold), each layer given its node as a default
argument and reading its options by key in forward."""
import torch
import torch.nn as nn

DEFAULTS = {
    "model": {
        "rms_norm": {"reduce_dim": 1, "upcast": True},
        "layer_norm": {"reduce_dim": -1, "upcast": True},
    },
}


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6, node=DEFAULTS["model"]["rms_norm"]):
        super().__init__()
        self.eps = eps
        self.node = node
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float() if self.node["upcast"] else x
        ms = h.pow(2).mean(dim=self.node["reduce_dim"], keepdim=True)
        return (h * torch.rsqrt(ms + self.eps)).to(x.dtype) * self.weight


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5, node=DEFAULTS["model"]["layer_norm"]):
        super().__init__()
        self.eps = eps
        self.node = node
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.float() if self.node["upcast"] else x
        d = self.node["reduce_dim"]
        mean = h.mean(dim=d, keepdim=True)
        var = (h - mean).pow(2).mean(dim=d, keepdim=True)
        return ((h - mean) * torch.rsqrt(var + self.eps)).to(x.dtype) * self.weight + self.bias
# bug-line: 12
