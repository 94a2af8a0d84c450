# attnprep: mha_fused
# expect: passed
"""Phi-3-like: a fused Wqkv parameter used with F.linear, unflatten into (3, H, D), einsum, a float
additive mask from torch.where."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        self.n_head = num_heads
        self.Wqkv = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, attention_mask=None, is_causal: bool = False) -> torch.Tensor:
        B, T, C = x.shape
        qkv = F.linear(x, self.Wqkv.weight, self.Wqkv.bias).unflatten(-1, (3, self.n_head, C // self.n_head))
        q, k, v = qkv.unbind(dim=2)  # (B, T, H, D) each
        att = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(C // self.n_head)
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep.tril()
        keep = keep[None, None]
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        att = att + torch.where(keep, 0.0, float("-inf"))
        y = torch.einsum("bhts,bshd->bthd", att.softmax(-1), v).flatten(2)
        return self.out_proj(y)
