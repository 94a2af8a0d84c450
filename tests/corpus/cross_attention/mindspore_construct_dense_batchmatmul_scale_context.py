# attnprep: cross_attention
# expect: wrong_output
# diagnosis: cross_scale_d_context
"""MindSpore habits ported: nn.Dense(in_channels, out_channels), construct() instead of forward (forward
only calls it), ops.BatchMatMul(transpose_b=True) and ops.Softmax(axis=-1) as callable objects made in
__init__, the scale as a Python float computed once from the widths."""
import math

import torch
import torch.nn as nn


class Dense(nn.Linear):
    def __init__(self, in_channels, out_channels, has_bias=True):
        super().__init__(in_channels, out_channels, bias=has_bias)


class BatchMatMul:
    def __init__(self, transpose_a=False, transpose_b=False):
        self.transpose_a, self.transpose_b = transpose_a, transpose_b

    def __call__(self, a, b):
        if self.transpose_a:
            a = a.transpose(-1, -2)
        if self.transpose_b:
            b = b.transpose(-1, -2)
        return torch.matmul(a, b)


class Softmax:
    def __init__(self, axis=-1):
        self.axis = axis

    def __call__(self, x):
        return torch.softmax(x, dim=self.axis)


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_model if d_context is None else d_context
        self.n_head = num_heads
        self.size_per_head = d_model // num_heads
        self.q_proj = Dense(d_model, d_model)
        self.k_proj = Dense(d_context, d_model)
        self.v_proj = Dense(d_context, d_model)
        self.o_proj = Dense(d_model, d_model)
        self.scale_factor = 1.0 / math.sqrt(d_context // num_heads)
        self.batch_matmul_qk = BatchMatMul(transpose_b=True)
        self.batch_matmul_pv = BatchMatMul()
        self.softmax = Softmax(axis=-1)
        self.dropout = nn.Dropout(dropout)

    def _heads(self, t):
        b, n, _ = t.shape
        return t.reshape(b, n, self.n_head, self.size_per_head).transpose(1, 2)

    def construct(self, x, context, context_mask=None):
        b, t, c = x.shape
        query = self._heads(self.q_proj(x))
        key = self._heads(self.k_proj(context))
        value = self._heads(self.v_proj(context))
        score = self.batch_matmul_qk(query, key) * self.scale_factor
        if context_mask is not None:
            adder = (1.0 - context_mask[:, None, None, :].to(score.dtype)) * -10000.0
            score = score + adder
        probs = self.dropout(self.softmax(score))
        ctx = self.batch_matmul_pv(probs, value).transpose(1, 2).reshape(b, t, c)
        return self.o_proj(ctx)

    def forward(self, x, context, context_mask=None):
        return self.construct(x, context, context_mask)
# bug-line: 48
