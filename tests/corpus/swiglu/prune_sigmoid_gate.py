# attnprep: swiglu
# expect: wrong_output
# diagnosis: swiglu_sigmoid
# The mistake: sigmoid(gate) instead of silu(gate) = gate · sigmoid(gate).
# A SwiGLU whose down projection was pruned (torch.nn.utils.prune.l1_unstructured, 30 %) at build time:
# the layer's weight is weight_orig · weight_mask.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import prune


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        prune.l1_unstructured(self.w2, name="weight", amount=0.3)

    def forward(self, x):
        return self.w2(torch.sigmoid(self.w1(x)) * self.w3(x))
# bug-line: 22
