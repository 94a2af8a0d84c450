# attnprep: cross_attention
# expect: passed
"""Correct: a Flax port: (in, out) kernels named query_kernel … with their biases, every product an einsum."""
import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    """Ported from a Flax module: parameters named kernel / bias per projection, kernels (in, out)."""

    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_context or d_model
        self.num_heads = num_heads
        self.query_kernel = nn.Parameter(torch.randn(d_model, d_model) / math.sqrt(d_model))
        self.query_bias = nn.Parameter(torch.zeros(d_model))
        self.key_kernel = nn.Parameter(torch.randn(d_context, d_model) / math.sqrt(d_context))
        self.key_bias = nn.Parameter(torch.zeros(d_model))
        self.value_kernel = nn.Parameter(torch.randn(d_context, d_model) / math.sqrt(d_context))
        self.value_bias = nn.Parameter(torch.zeros(d_model))
        self.out_kernel = nn.Parameter(torch.randn(d_model, d_model) / math.sqrt(d_model))
        self.out_bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x, context, context_mask=None):
        B, T, C = x.shape
        S = context.shape[1]
        H, D = self.num_heads, C // self.num_heads
        q = torch.einsum("btc,cf->btf", x, self.query_kernel) + self.query_bias
        k = torch.einsum("bsc,cf->bsf", context, self.key_kernel) + self.key_bias
        v = torch.einsum("bsc,cf->bsf", context, self.value_kernel) + self.value_bias
        q, k, v = q.view(B, T, H, D), k.view(B, S, H, D), v.view(B, S, H, D)
        logits = torch.einsum("bqhd,bkhd->bhqk", q / math.sqrt(D), k)
        if context_mask is not None:
            big_neg = torch.finfo(logits.dtype).min
            logits = torch.where(context_mask[:, None, None, :], logits, big_neg)
        w = logits.softmax(-1)
        y = torch.einsum("bhqk,bkhd->bqhd", w, v).reshape(B, T, C)
        return torch.einsum("btc,cf->btf", y, self.out_kernel) + self.out_bias
