# attnprep: mqa
# expect: passed
"""typing.Generic / TypeVar habits: a generic Pair[T] box for (key, value) and a Stage[T] wrapper
whose apply() is typed; the attention reads like a typed library."""
import math
from typing import Callable, Generic, Optional, TypeVar

import torch
import torch.nn as nn

T = TypeVar("T")
U = TypeVar("U")


class Pair(Generic[T]):
    def __init__(self, first: T, second: T) -> None:
        self.first = first
        self.second = second

    def map(self, fn: Callable[[T], U]) -> "Pair[U]":
        return Pair(fn(self.first), fn(self.second))


class Stage(Generic[T]):
    def __init__(self, fn: Callable[[T], T]) -> None:
        self.fn = fn

    def apply(self, value: T) -> T:
        return self.fn(value)


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_dim)
        self.v_proj = nn.Linear(d_model, self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, attention_mask: Optional[torch.Tensor] = None,
                is_causal: bool = False) -> torch.Tensor:
        B, L, C = x.shape
        H, D = self.num_heads, self.head_dim
        q = self.q_proj(x).view(B, L, H, D).transpose(1, 2)  # (B, H, L, D)
        kv: Pair[torch.Tensor] = Pair(self.k_proj(x), self.v_proj(x)).map(lambda t: t[:, None])  # (B, 1, L, D)
        scores = q @ kv.first.transpose(-2, -1) / math.sqrt(D)  # (B, H, L, L)
        allowed = torch.ones(B, 1, L, L, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        if is_causal:
            allowed = allowed & torch.ones(L, L, dtype=torch.bool, device=x.device).tril()
        masker: Stage[torch.Tensor] = Stage(lambda s: s.masked_fill(~allowed, float("-inf")))
        probs = torch.softmax(masker.apply(scores), dim=-1)
        out = (probs @ kv.second).transpose(1, 2).reshape(B, L, C)
        return self.o_proj(out)
