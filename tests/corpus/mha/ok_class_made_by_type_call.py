# attnprep: mha
# expect: passed
"""Correct, metaprogrammed: the class built with type("MultiHeadAttention", (nn.Module,), {...}) from
an __init__ and a forward defined as plain functions first."""

import math

import torch
import torch.nn as nn


def _init(self, d_model, num_heads, dropout=0.0):
    nn.Module.__init__(self)
    self.h = num_heads
    for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
        setattr(self, name, nn.Linear(d_model, d_model))


def _forward(self, x, attention_mask=None, is_causal=False):
    B, T, C = x.shape
    D = C // self.h
    q, k, v = (getattr(self, n)(x).view(B, T, self.h, D).transpose(1, 2) for n in ("q_proj", "k_proj", "v_proj"))
    s = q @ k.transpose(-1, -2) / math.sqrt(D)
    if is_causal:
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
    if attention_mask is not None:
        s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
    return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))


MultiHeadAttention = type("MultiHeadAttention", (nn.Module,), {"__init__": _init, "forward": _forward})
