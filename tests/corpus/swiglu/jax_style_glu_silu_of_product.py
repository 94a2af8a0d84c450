# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_silu_on_product
"""flax.linen-style: `nn.compact`-like single forward with `jax.nn.silu` spelled as a lambda,
the gate and up kernels applied by F.linear on their weights. The activation is applied to the
gated product, silu(gate * up), instead of to the gate alone."""

import torch
import torch.nn as nn
import torch.nn.functional as F

jax_nn_silu = lambda z: z * torch.sigmoid(z)  # noqa: E731


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        gate = F.linear(x, self.w1.weight)
        up = F.linear(x, self.w3.weight)
        return F.linear(jax_nn_silu(gate * up), self.w2.weight)
# bug-line: 25
