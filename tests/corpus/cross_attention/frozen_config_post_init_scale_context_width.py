# attnprep: cross_attention
# expect: wrong_output
# diagnosis: cross_scale_d_context
"""A frozen dataclass config whose derived numbers are set in __post_init__ with
object.__setattr__ (head_dim, scale), the module a thin shell over it; heads by view / permute."""
import math
from dataclasses import dataclass, field

import torch
import torch.nn as nn


@dataclass(frozen=True)
class CrossConfig:
    d_model: int
    n_heads: int
    d_context: int
    head_dim: int = field(init=False)
    scale: float = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "head_dim", self.d_model // self.n_heads)
        object.__setattr__(self, "scale", 1.0 / math.sqrt(self.d_context))


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        self.cfg = CrossConfig(d_model, num_heads, d_model if d_context is None else d_context)
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(self.cfg.d_context, d_model)
        self.v_proj = nn.Linear(self.cfg.d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, context, context_mask=None):
        B, T, _ = x.shape
        S = context.shape[1]
        H, D = self.cfg.n_heads, self.cfg.head_dim
        q = self.q_proj(x).view(B, T, H, D).permute(0, 2, 1, 3)
        k = self.k_proj(context).view(B, S, H, D).permute(0, 2, 1, 3)
        v = self.v_proj(context).view(B, S, H, D).permute(0, 2, 1, 3)
        att = q @ k.transpose(-1, -2) * self.cfg.scale
        if context_mask is not None:
            att = att.masked_fill(~context_mask[:, None, None, :], float("-inf"))
        att = self.drop(att.softmax(dim=-1))
        return self.o_proj((att @ v).permute(0, 2, 1, 3).reshape(B, T, H * D))
# bug-line: 23
