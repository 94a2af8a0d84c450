# attnprep: mha
# expect: passed
"""Correct: a frozen dataclass config with __slots__, a generator over heads, chunk-split heads, logsumexp softmax."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator, Optional

import torch
import torch.nn as nn


@dataclass(frozen=True, slots=True)
class Cfg:
    d_model: int
    n_heads: int

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


def heads(t: torch.Tensor, n: int) -> Iterator[torch.Tensor]:
    """Yield each head's slice (B, T, D) of a (B, T, n*D) tensor.

    >>> [h.shape for h in heads(torch.zeros(1, 2, 4), 2)]
    [torch.Size([1, 2, 2]), torch.Size([1, 2, 2])]
    """
    yield from t.chunk(n, dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.cfg = Cfg(d_model, num_heads)
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, attention_mask: Optional[torch.Tensor] = None,
                is_causal: bool = False) -> torch.Tensor:
        T = x.shape[1]
        bias = x.new_zeros(x.shape[0], T, T)  # (B, T, T) additive
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask[:, None, :], float("-inf"))
        if is_causal:
            bias = bias + torch.full((T, T), float("-inf"), device=x.device, dtype=x.dtype).triu(1)
        outs = []
        for qh, kh, vh in zip(heads(self.q_proj(x), self.cfg.n_heads),
                              heads(self.k_proj(x), self.cfg.n_heads),
                              heads(self.v_proj(x), self.cfg.n_heads)):
            s = qh @ kh.transpose(1, 2) / math.sqrt(self.cfg.head_dim) + bias
            p = torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True))
            outs.append(p @ vh)
        return self.o_proj(torch.cat(outs, dim=-1))
