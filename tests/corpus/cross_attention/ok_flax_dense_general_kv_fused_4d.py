# attnprep: cross_attention
# expect: passed
# Flax port: query DenseGeneral kernel (d_model, H, D), one key/value DenseGeneral over the context with
# features (2, H, D): kernel (d_context, 2, H, D), bias (2, H, D); output kernel (H, D, d_model).
import math
import torch
import torch.nn as nn


class DenseGeneral(nn.Module):
    def __init__(self, in_shape, features):
        super().__init__()
        self.kernel = nn.Parameter(torch.randn(*in_shape, *features) / math.sqrt(math.prod(in_shape)))
        self.bias = nn.Parameter(torch.zeros(*features))
        self.n_in = len(in_shape)

    def forward(self, x):
        dims = list(range(x.dim() - self.n_in, x.dim()))
        return torch.tensordot(x, self.kernel, dims=(dims, list(range(self.n_in)))) + self.bias


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_context or d_model
        self.h, self.d = num_heads, d_model // num_heads
        self.query = DenseGeneral((d_model,), (num_heads, self.d))
        self.key_value = DenseGeneral((d_context,), (2, num_heads, self.d))
        self.out = DenseGeneral((num_heads, self.d), (d_model,))

    def forward(self, x, context, context_mask=None):
        q = self.query(x)  # (B, T, H, D)
        k, v = self.key_value(context).unbind(2)  # (B, S, H, D)
        s = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(self.d)
        if context_mask is not None:
            s = s.masked_fill(~context_mask[:, None, None, :], float("-inf"))
        return self.out(torch.einsum("bhts,bshd->bthd", s.softmax(-1), v))
