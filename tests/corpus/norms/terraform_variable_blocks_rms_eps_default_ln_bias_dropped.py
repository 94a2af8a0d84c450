# attnprep: norms
# expect: wrong_output
# diagnosis: norm_eps_convention + layernorm_bias_not_applied
"""Terraform / HCL habits: every setting is a `variable` block (type, default, description) in a
module-level table, defaults read from it by name, and `locals` computed once; RMSNorm's eps
variable was given Llama-2's 1e-5, and LayerNorm's output forgets its bias."""
import torch
import torch.nn as nn

variable = {
    "rms_norm_eps": {"type": "number", "default": 1e-5, "description": "RMSNorm epsilon"},
    "layer_norm_eps": {"type": "number", "default": 1e-5, "description": "LayerNorm epsilon"},
    "stat_dtype": {"type": "string", "default": "float32", "description": "statistics dtype"},
}


def var(name):
    return variable[name]["default"]


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=var("rms_norm_eps")):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        locals_ = {"h": x.to(getattr(torch, var("stat_dtype")))}
        locals_["inv_rms"] = torch.rsqrt(locals_["h"].pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * (locals_["h"] * locals_["inv_rms"]).to(x.dtype)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=var("layer_norm_eps")):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.to(getattr(torch, var("stat_dtype")))
        mean = h.mean(-1, keepdim=True)
        variance = (h - mean).pow(2).mean(-1, keepdim=True)
        normed = ((h - mean) * torch.rsqrt(variance + self.eps)).to(x.dtype)
        return normed * self.weight
# bug-line: 11, 45
