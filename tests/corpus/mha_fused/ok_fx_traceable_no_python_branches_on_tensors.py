# attnprep: mha_fused
# expect: passed
"""Correct: written to stay torch.fx-traceable: no shape-dependent Python branch on tensors, the
causal flag folded into a bias via torch.where on an always-built tril, the padding mask through
a helper that returns zeros when absent; the qkv weight view (3, H, D, C) and one einsum."""

import math

import torch
import torch.nn as nn


def key_bias(attention_mask, ref):
    if attention_mask is None:
        return ref.new_zeros(())
    return torch.where(attention_mask, 0.0, float("-inf"))[:, None, None, :].to(ref.dtype)


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.H = num_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, D = self.H, C // self.H
        w = self.qkv_proj.weight.view(3, H, D, C)
        b = self.qkv_proj.bias.view(3, 1, H, 1, D)
        qkv = torch.einsum("btc,shdc->sbhtd", x, w) + b  # (3, B, H, T, D)
        q, k, v = qkv.unbind(0)
        s = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(D)
        tri = torch.ones(T, T, device=x.device).tril()
        causal_bias = torch.where(tri.bool() | (not is_causal), 0.0, float("-inf")).to(s.dtype)
        s = s + causal_bias + key_bias(attention_mask, s)
        p = s.softmax(-1)
        o = torch.einsum("bhij,bhjd->bihd", p, v).reshape(B, T, C)
        return self.o_proj(o)
