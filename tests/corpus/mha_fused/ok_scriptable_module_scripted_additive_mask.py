# attnprep: mha_fused
# expect: passed
"""Correct: the whole module is TorchScript-compatible (typed Optional), a scripted free function for the mask."""
import math
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


@torch.jit.script
def additive_mask(keep: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    zero = torch.zeros(keep.shape, dtype=dtype, device=keep.device)
    return zero.masked_fill(~keep, -10000.0 * 1e5)


class FusedMultiHeadAttention(nn.Module):
    __constants__ = ["num_heads", "head_dim"]

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.p = dropout

    def forward(self, x: torch.Tensor, attention_mask: Optional[torch.Tensor] = None,
                is_causal: bool = False) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv_proj(x).split(C, dim=2)
        q = q.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = k.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        v = v.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        keep = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        if is_causal:
            keep = keep & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        s = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim) + additive_mask(keep, q.dtype)
        a = F.dropout(F.softmax(s, dim=-1), p=self.p, training=self.training)
        return self.o_proj((a @ v).transpose(1, 2).reshape(B, T, C))
