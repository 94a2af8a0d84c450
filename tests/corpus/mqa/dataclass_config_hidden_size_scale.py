# attnprep: mqa
# expect: wrong_output
# diagnosis: scale_d_model
"""A `@dataclass AttnConfig(hidden_size, num_attention_heads)` with `head_dim` / `softmax_scale`
properties, typed forward, one shared K/V head broadcast with expand. The softmax_scale property
reads hidden_size instead of head_dim: 1/sqrt(d_model)."""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class AttnConfig:
    hidden_size: int
    num_attention_heads: int

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def softmax_scale(self) -> float:
        return 1.0 / math.sqrt(self.hidden_size)


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.cfg = AttnConfig(d_model, num_heads)
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.cfg.head_dim)
        self.v_proj = nn.Linear(d_model, self.cfg.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, is_causal: bool = False) -> torch.Tensor:
        B, T, _ = x.shape
        H, D = self.cfg.num_attention_heads, self.cfg.head_dim
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)
        k = self.k_proj(x).unsqueeze(1).expand(B, H, T, D)
        v = self.v_proj(x).unsqueeze(1).expand(B, H, T, D)
        s = (q @ k.transpose(-1, -2)) * self.cfg.softmax_scale
        keep = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        if is_causal:
            keep = keep & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, H * D))
# bug-line: 26
