# attnprep: cross_attention
# expect: passed
"""Correct: an abc.ABC attention base whose subclass supplies where keys and values come from
(_kv_source returns the context), built through a @classmethod from_config over a dataclass, the
mask as uint8 converted with .bool(), scores with torch.bmm on (B*H, T, D)."""

import abc
import dataclasses
import math
from typing import Optional

import torch
import torch.nn as nn


@dataclasses.dataclass
class XAttnConfig:
    d_model: int
    num_heads: int
    d_context: Optional[int] = None


class _Base(nn.Module, abc.ABC):
    def __init__(self, cfg: XAttnConfig):
        super().__init__()
        d_ctx = cfg.d_context or cfg.d_model
        self.h = cfg.num_heads
        self.to_q = nn.Linear(cfg.d_model, cfg.d_model)
        self.to_k = nn.Linear(d_ctx, cfg.d_model)
        self.to_v = nn.Linear(d_ctx, cfg.d_model)
        self.to_out = nn.Linear(cfg.d_model, cfg.d_model)

    @classmethod
    def from_config(cls, cfg):
        return cls(cfg)

    @abc.abstractmethod
    def _kv_source(self, x, context): ...

    def attend(self, x, context, keep_u8):
        B, T, C = x.shape
        src = self._kv_source(x, context)
        S, h, d = src.shape[1], self.h, C // self.h
        fold = lambda t, n: t.view(B, n, h, d).permute(0, 2, 1, 3).reshape(B * h, n, d)
        q, k, v = fold(self.to_q(x), T), fold(self.to_k(src), S), fold(self.to_v(src), S)
        s = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(d)
        if keep_u8 is not None:
            keep = keep_u8.bool()[:, None, None, :].expand(B, h, 1, S).reshape(B * h, 1, S)
            s = s.masked_fill(~keep, -1e9)
        o = torch.bmm(s.softmax(-1), v).view(B, h, T, d).permute(0, 2, 1, 3).reshape(B, T, C)
        return self.to_out(o)


class _Cross(_Base):
    def _kv_source(self, x, context):
        return context


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        self.impl = _Cross.from_config(XAttnConfig(d_model, num_heads, d_context))

    def forward(self, x, context, context_mask=None):
        u8 = None if context_mask is None else context_mask.to(torch.uint8)
        return self.impl.attend(x, context, u8)
