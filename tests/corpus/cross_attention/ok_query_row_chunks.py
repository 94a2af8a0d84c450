# attnprep: cross_attention
# expect: passed
"""Memory-saving loop over chunks of query rows (2 at a time), dataclass config, bias=True linears with own names, scores in float64 for the softmax."""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class CrossAttnConfig:
    d_model: int
    n_heads: int
    d_context: int
    dropout: float = 0.0
    q_chunk: int = 2


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        self.cfg = CrossAttnConfig(d_model, num_heads, d_context if d_context is not None else d_model, dropout)
        c = self.cfg
        self.query = nn.Linear(c.d_model, c.d_model, bias=True)
        self.key = nn.Linear(c.d_context, c.d_model, bias=True)
        self.value = nn.Linear(c.d_context, c.d_model, bias=True)
        self.out = nn.Linear(c.d_model, c.d_model, bias=True)

    def forward(self, x, context, context_mask=None):
        c = self.cfg
        B, T, _ = x.shape
        S = context.shape[1]
        D = c.d_model // c.n_heads
        q = self.query(x).view(B, T, c.n_heads, D).transpose(1, 2)
        k = self.key(context).view(B, S, c.n_heads, D).transpose(1, 2)
        v = self.value(context).view(B, S, c.n_heads, D).transpose(1, 2)
        rows = []
        for start in range(0, T, c.q_chunk):
            qc = q[:, :, start:start + c.q_chunk]  # (B, H, t, D)
            s = torch.matmul(qc, k.transpose(2, 3)) / math.sqrt(D)
            if context_mask is not None:
                s = s.masked_fill(context_mask.logical_not().view(B, 1, 1, S), float("-inf"))
            p = s.double().softmax(-1).to(s.dtype)
            rows.append(torch.matmul(p, v))
        o = torch.cat(rows, dim=2).transpose(1, 2).reshape(B, T, c.d_model)
        return self.out(o)
