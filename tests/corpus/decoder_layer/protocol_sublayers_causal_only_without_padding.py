# attnprep: decoder_layer
# expect: mask_leak
# diagnosis: decoder_causal_missing
"""typing.Protocol sub-layers: `class SubLayer(Protocol): def __call__(self, x, mask) -> Tensor`,
a generic `residual(norm, sublayer)` combinator returning a closure, and the mask prepared once by
`make_mask(T, attention_mask)`. make_mask builds the triangle only in its `attention_mask is None`
branch: given a padding mask it returns the padding mask alone, so padded batches lose causality
while unpadded ones keep it."""

from __future__ import annotations

import math
from typing import Callable, Protocol

import torch
import torch.nn as nn
import torch.nn.functional as F


class SubLayer(Protocol):
    def __call__(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor: ...


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def residual(norm: nn.Module, sublayer: SubLayer) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    return lambda x, mask: x + sublayer(norm(x), mask)


def make_mask(T: int, attention_mask: torch.Tensor | None, device) -> torch.Tensor:
    if attention_mask is None:
        return torch.ones(T, T, dtype=torch.bool, device=device).tril()[None, None]
    return attention_mask[:, None, None, :]


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.h, self.g, self.theta = num_heads, num_kv_heads, rope_theta
        self.d = d_model // num_heads
        self.attn_norm, self.ffn_norm = RMSNorm(d_model, eps), RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def _rope(self, x):
        T = x.shape[2]
        inv = 1.0 / self.theta ** (torch.arange(0, self.d, 2, device=x.device).float() / self.d)
        f = torch.outer(torch.arange(T, device=x.device).float(), inv)
        f = torch.cat([f, f], -1)
        half = self.d // 2
        return x * f.cos() + torch.cat([-x[..., half:], x[..., :half]], -1) * f.sin()

    def _attend(self, x, mask):
        B, T, C = x.shape
        q = self._rope(self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2))
        k = self._rope(self.k_proj(x).view(B, T, self.g, self.d).transpose(1, 2))
        v = self.v_proj(x).view(B, T, self.g, self.d).transpose(1, 2)
        k, v = (t.repeat_interleave(self.h // self.g, 1) for t in (k, v))
        s = (q @ k.transpose(-1, -2)) / math.sqrt(self.d)
        s = s.masked_fill(~mask, float("-inf"))
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))

    def _ffn(self, x, mask):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))

    def forward(self, x, attention_mask=None):
        mask = make_mask(x.shape[1], attention_mask, x.device)
        h = residual(self.attn_norm, self._attend)(x, mask)
        return residual(self.ffn_norm, self._ffn)(h, mask)
# bug-line: 42
