# attnprep: cross_attention
# expect: wrong_output
# diagnosis: cross_scale_d_context
"""Type-hinted config; the scale is computed from the context width per head (d_context // heads),
which differs from head_dim when d_context != d_model: cross_scale_d_context (sub-variant per_head)."""

import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass(frozen=True)
class CrossAttnConfig:
    d_model: int
    n_heads: int
    d_context: int


class CrossAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_context: Optional[int] = None, dropout: float = 0.0):
        super().__init__()
        cfg = CrossAttnConfig(d_model, num_heads, d_context if d_context is not None else d_model)
        self.cfg = cfg
        self.head_dim: int = cfg.d_model // cfg.n_heads
        self.scale: float = 1.0 / math.sqrt(cfg.d_context // cfg.n_heads)
        self.q_proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.k_proj = nn.Linear(cfg.d_context, cfg.d_model)
        self.v_proj = nn.Linear(cfg.d_context, cfg.d_model)
        self.o_proj = nn.Linear(cfg.d_model, cfg.d_model)

    def forward(self, x: torch.Tensor, context: torch.Tensor, context_mask: Optional[torch.Tensor] = None):
        B, T, _ = x.shape
        S = context.shape[1]
        H, D = self.cfg.n_heads, self.head_dim
        q = self.q_proj(x).unflatten(-1, (H, D)).transpose(1, 2)
        k = self.k_proj(context).unflatten(-1, (H, D)).transpose(1, 2)
        v = self.v_proj(context).unflatten(-1, (H, D)).transpose(1, 2)
        logits = torch.einsum("bhtd,bhsd->bhts", q, k) * self.scale
        if context_mask is not None:
            logits = logits.masked_fill(~context_mask.view(B, 1, 1, S), float("-inf"))
        weights = F.softmax(logits, dim=-1)
        out = torch.einsum("bhts,bhsd->bhtd", weights, v).transpose(1, 2).reshape(B, T, H * D)
        return self.o_proj(out)
# bug-line: 29
