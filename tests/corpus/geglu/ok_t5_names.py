# attnprep: geglu
# expect: passed
"""T5 v1.1's names (wi_0 gate, wi_1 up, wo down), GELU written out with tanh."""
import math
import torch
import torch.nn as nn


class GeGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.wi_0 = nn.Linear(d_model, d_ff, bias=False)
        self.wi_1 = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        g = self.wi_0(x)
        g = 0.5 * g * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (g + 0.044715 * g ** 3)))
        return self.wo(g * self.wi_1(x))
