# attnprep: mha_fused
# expect: wrong_output
# diagnosis: fused_split_order
"""An enum.Enum `Part` mapping each role to its slot in the fused projection (`Part.K.value * C`),
slices taken by a `part()` helper. The enum was written K, Q, V (the order a key-first paper
lists them), so the fused output is read as [k; q; v] instead of the contract's [q; k; v]."""

import enum
import math

import torch
import torch.nn as nn


class Part(enum.Enum):
    K = 0
    Q = 1
    V = 2


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        fused = self.qkv_proj(x)

        def part(p):
            return fused[..., p.value * C:(p.value + 1) * C].view(B, T, self.h, C // self.h).transpose(1, 2)

        q, k, v = part(Part.Q), part(Part.K), part(Part.V)
        s = q @ k.transpose(-2, -1) / math.sqrt(C // self.h)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))
# bug-line: 16, 17
