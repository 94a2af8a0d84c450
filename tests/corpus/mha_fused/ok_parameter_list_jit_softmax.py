# attnprep: mha_fused
# expect: passed
"""Correct: the four tensors kept in an nn.ParameterList ([W_qkv, b_qkv, W_o, b_o], names 0..3) used through F.linear, a torch.jit.script masked softmax with a -1e9 fill."""
import math
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


@torch.jit.script
def masked_softmax(scores: torch.Tensor, keep: Optional[torch.Tensor]) -> torch.Tensor:
    if keep is not None:
        scores = scores.masked_fill(~keep, -10000.0 * 1e5)
    return torch.softmax(scores, dim=-1)


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.params = nn.ParameterList([
            nn.Parameter(torch.randn(3 * d_model, d_model) * 0.02),
            nn.Parameter(torch.zeros(3 * d_model)),
            nn.Parameter(torch.randn(d_model, d_model) * 0.02),
            nn.Parameter(torch.zeros(d_model)),
        ])
        self.drop = dropout

    def forward(self, x, attention_mask=None, is_causal=False):
        w_qkv, b_qkv, w_o, b_o = self.params
        B, T, C = x.shape
        D = C // self.h
        qkv = F.linear(x, w_qkv, b_qkv).unflatten(-1, (3, self.h, D)).permute(2, 0, 3, 1, 4)  # (3, B, H, T, D)
        q, k, v = qkv[0], qkv[1], qkv[2]
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D)
        keep: Optional[torch.Tensor] = None
        if attention_mask is not None:
            keep = attention_mask[:, None, None, :].expand(B, 1, T, T)
        if is_causal:
            tri = torch.tril(torch.ones(T, T, device=x.device)).bool()
            keep = tri if keep is None else keep & tri
        p = F.dropout(masked_softmax(s, keep), self.drop, self.training)
        o = torch.matmul(p, v).permute(0, 2, 1, 3).flatten(-2)
        return F.linear(o, w_o, b_o)
