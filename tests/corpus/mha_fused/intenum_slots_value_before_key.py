# attnprep: mha_fused
# expect: wrong_output
# diagnosis: fused_split_order
"""Enum-keyed fused projection: an IntEnum names the three slots of the fused output, a
`slot(t, which)` accessor narrows the last dim by `which * d_model`, heads split by unflatten,
attrs-like frozen/slots dataclass for the sizes."""
import math
from dataclasses import dataclass
from enum import IntEnum

import torch
import torch.nn as nn


class Slot(IntEnum):
    QUERY = 0
    VALUE = 1
    KEY = 2


@dataclass(frozen=True, slots=True)
class Sizes:
    d_model: int
    heads: int

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads


def slot(t: torch.Tensor, which: Slot, width: int) -> torch.Tensor:
    return t.narrow(-1, int(which) * width, width)


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.sizes = Sizes(d_model, num_heads)
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def heads(self, t):
        return t.unflatten(-1, (self.sizes.heads, self.sizes.head_dim)).transpose(1, 2)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        fused = self.qkv_proj(x)
        q = self.heads(slot(fused, Slot.QUERY, C))
        k = self.heads(slot(fused, Slot.KEY, C))
        v = self.heads(slot(fused, Slot.VALUE, C))
        att = q @ k.transpose(-2, -1) / math.sqrt(self.sizes.head_dim)
        if attention_mask is not None:
            att = att.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            att = att.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        att = self.dropout(att.softmax(-1))
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(y)
# bug-line: 17, 18
