# attnprep: mha
# expect: mask_leak
# diagnosis: padding_mask_ignored
"""Gemma-style attention that applies the padding mask only when the last position of some row is padding (a right-padding shortcut): left-padded batches are never masked."""

import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, is_causal: bool = False):
        B, T, C = x.shape
        shape = (B, T, self.num_heads, self.head_dim)
        q = self.q_proj(x).view(shape).transpose(1, 2)
        k = self.k_proj(x).view(shape).transpose(1, 2)
        v = self.v_proj(x).view(shape).transpose(1, 2)

        scores = torch.matmul(q, k.transpose(-1, -2)) * self.scaling
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep.tril()
        keep = keep.expand(B, 1, T, T)
        if attention_mask is not None and not attention_mask[:, -1].all():  # 有 padding 才处理
            keep = keep & attention_mask[:, None, None, :].bool()
        scores = scores.masked_fill(~keep, float("-inf"))
        probs = scores.softmax(dim=-1)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out)
# bug-line: 35
