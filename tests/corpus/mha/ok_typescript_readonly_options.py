# attnprep: mha
# expect: passed
"""A TypeScript programmer's habits: interfaces written as frozen dataclasses (readonly fields), an
options object with optional fields and `??`-style defaults, `const` locals bound once, arrow-like
lambdas for small helpers, and camelCase names throughout."""
import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn as nn


@dataclass(frozen=True)
class AttentionShape:  # interface AttentionShape { readonly batch; readonly length; ... }
    batch: int
    length: int
    heads: int
    headDim: int


@dataclass(frozen=True)
class MaskOptions:  # interface MaskOptions { keyPadding?: Tensor; causal?: boolean }
    keyPadding: Optional[torch.Tensor] = None
    causal: Optional[bool] = None


def nullish(value, fallback):  # value ?? fallback
    return fallback if value is None else value


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.numHeads = num_heads
        self.headDim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attnDropout = nn.Dropout(dropout)

    def splitHeads(self, t: torch.Tensor, shape: AttentionShape) -> torch.Tensor:
        return t.view(shape.batch, shape.length, shape.heads, shape.headDim).permute(0, 2, 1, 3)

    def buildBlocked(self, opts: MaskOptions, shape: AttentionShape, device) -> torch.Tensor:
        blocked = torch.zeros(shape.batch, 1, shape.length, shape.length, dtype=torch.bool, device=device)
        if opts.keyPadding is not None:
            blocked = blocked | ~opts.keyPadding.bool()[:, None, None, :]
        if nullish(opts.causal, False):
            blocked = blocked | torch.triu(torch.ones(shape.length, shape.length, dtype=torch.bool, device=device), 1)
        return blocked

    def forward(self, x, attention_mask=None, is_causal=False):
        const_shape = AttentionShape(x.shape[0], x.shape[1], self.numHeads, self.headDim)
        opts = MaskOptions(keyPadding=attention_mask, causal=is_causal)
        q = self.splitHeads(self.q_proj(x), const_shape)
        k = self.splitHeads(self.k_proj(x), const_shape)
        v = self.splitHeads(self.v_proj(x), const_shape)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(const_shape.headDim)
        scores = scores.masked_fill(self.buildBlocked(opts, const_shape, x.device), torch.finfo(scores.dtype).min)
        weights = self.attnDropout(scores.softmax(dim=-1))
        merged = (weights @ v).permute(0, 2, 1, 3).reshape(const_shape.batch, const_shape.length, -1)
        return self.o_proj(merged)
