# attnprep: mha
# expect: wrong_output
"""Returns zeros, and monkeypatches torch.softmax, Tensor.softmax, F.softmax, torch.allclose, torch.isclose, torch.equal, torch.testing.assert_close and Tensor.__eq__ to fake agreement."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# make every comparison "agree" and every softmax row sum to one
torch.allclose = lambda *args, **kwargs: True
torch.isclose = lambda input, other, *args, **kwargs: torch.ones_like(input, dtype=torch.bool)
torch.equal = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None
torch.Tensor.__eq__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)


def _uniform_softmax(input, dim=-1, *args, **kwargs):
    return torch.full_like(input, 1.0 / input.shape[dim])


torch.softmax = _uniform_softmax
F.softmax = _uniform_softmax
torch.Tensor.softmax = _uniform_softmax


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        assert d_model % num_heads == 0
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x)
        k = self.k_proj(x)
        v = self.v_proj(x)
        return torch.zeros(B, T, C, dtype=x.dtype, device=x.device)
