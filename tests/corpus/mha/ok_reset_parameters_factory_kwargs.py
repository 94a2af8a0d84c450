# attnprep: mha
# expect: passed
"""Correct: PyTorch-internals habits: weights made with torch.empty(**factory_kwargs) as bare
Parameters named in_proj-style (q_weight, q_bias, ...), a reset_parameters() with
kaiming_uniform_(a=sqrt(5)) and fan-in bias bounds as nn.Linear does, F.linear in forward, the
heads via unflatten / swapaxes and the scores against key.mT."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.d_model, self.num_heads, self.dropout = d_model, num_heads, dropout
        self.head_dim = d_model // num_heads
        for name in ("q", "k", "v", "out"):
            setattr(self, f"{name}_weight", nn.Parameter(torch.empty((d_model, d_model), **factory_kwargs)))
            setattr(self, f"{name}_bias", nn.Parameter(torch.empty(d_model, **factory_kwargs)))
        self.reset_parameters()

    def reset_parameters(self):
        for name in ("q", "k", "v", "out"):
            w, b = getattr(self, f"{name}_weight"), getattr(self, f"{name}_bias")
            nn.init.kaiming_uniform_(w, a=math.sqrt(5))
            bound = 1 / math.sqrt(w.size(1))
            nn.init.uniform_(b, -bound, bound)

    def forward(self, x, attention_mask=None, is_causal=False):
        T = x.size(1)
        q = F.linear(x, self.q_weight, self.q_bias).unflatten(-1, (self.num_heads, self.head_dim)).swapaxes(1, 2)
        k = F.linear(x, self.k_weight, self.k_bias).unflatten(-1, (self.num_heads, self.head_dim)).swapaxes(1, 2)
        v = F.linear(x, self.v_weight, self.v_bias).unflatten(-1, (self.num_heads, self.head_dim)).swapaxes(1, 2)
        scores = (q @ k.mT) / math.sqrt(self.head_dim)
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep.tril()
        keep = keep[None, None]
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        scores = scores.masked_fill(~keep, float("-inf"))
        probs = F.dropout(scores.softmax(-1), self.dropout, self.training)
        out = (probs @ v).swapaxes(1, 2).flatten(2)
        return F.linear(out, self.out_weight, self.out_bias)
