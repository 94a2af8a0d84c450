# attnprep: norms
# expect: wrong_output
# diagnosis: norm_eps_outside_sqrt + norm_unbiased_variance
"""Exported from a Jupyter notebook (jupytext percent format): `# %%` cells, a markdown cell per
norm, module-level constants, the quick sanity check left in its own cell under a __main__ guard."""
# %% [markdown]
# # Norms
# RMSNorm (Llama) and LayerNorm, statistics in float32.

# %%
import torch
import torch.nn as nn

COMPUTE_DTYPE = torch.float32


# %% [markdown]
# ## RMSNorm: x / sqrt(mean(x^2) + eps) * w

# %%
class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.to(COMPUTE_DTYPE)
        rms = h.pow(2).mean(dim=-1, keepdim=True).sqrt() + self.eps
        return (h / rms).to(x.dtype) * self.weight


# %% [markdown]
# ## LayerNorm: (x - mean) / sqrt(var + eps) * w + b

# %%
class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        h = x.to(COMPUTE_DTYPE)
        mu = h.mean(dim=-1, keepdim=True)
        var = h.var(dim=-1, keepdim=True)
        return ((h - mu) / torch.sqrt(var + self.eps)).to(x.dtype) * self.weight + self.bias


# %%
if __name__ == "__main__":
    x = torch.randn(2, 3, 8)
    print(RMSNorm(8)(x).shape, LayerNorm(8)(x).mean(-1))
# bug-line: 29, 47
