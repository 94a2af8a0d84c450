# attnprep: mla_decode
# expect: passed
"""Correct: a typing.Protocol for the cache pair, a NamedTuple `LatentCache(c_kv, k_pe)` returned
(a tuple, so it unpacks as the contract's), and a recursive `_decode` that takes the new tokens one
chunk at a time (halves) and feeds each call's cache to the next, so the prefill itself is built
by recursion. Absorbed path with W_UK / W_UV from the (H, nope + dv, c) view."""

from __future__ import annotations

import math
from typing import NamedTuple, Protocol

import torch
import torch.nn as nn


class HasLatents(Protocol):
    c_kv: torch.Tensor
    k_pe: torch.Tensor


class LatentCache(NamedTuple):
    c_kv: torch.Tensor
    k_pe: torch.Tensor


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


def rope_at(x, start, theta):
    T, r = x.shape[1], x.shape[-1]
    inv = theta ** (-torch.arange(0, r, 2, dtype=torch.float32, device=x.device) / r)
    ang = torch.arange(start, start + T, dtype=torch.float32, device=x.device)[:, None] * inv
    ang = ang.view((1, T) + (1,) * (x.dim() - 3) + (r // 2,))
    a, b = x.float()[..., 0::2], x.float()[..., 1::2]
    return torch.stack([a * ang.cos() - b * ang.sin(), a * ang.sin() + b * ang.cos()], -1).flatten(-2).to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.c, self.dn, self.dr, self.dv = num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def _step(self, x, cache: HasLatents | None):
        B, T, _ = x.shape
        H, c, dn, dr, dv = self.H, self.c, self.dn, self.dr, self.dv
        past = 0 if cache is None else cache.c_kv.shape[1]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, dn + dr)
        q_nope, q_pe = q[..., :dn], rope_at(q[..., dn:], past, self.theta)
        c_kv, k_pe = self.wkv_a(x).split([c, dr], -1)
        c_kv, k_pe = self.kv_norm(c_kv), rope_at(k_pe, past, self.theta)
        if cache is not None:
            c_kv, k_pe = torch.cat([cache.c_kv, c_kv], 1), torch.cat([cache.k_pe, k_pe], 1)
        w = self.wkv_b.weight.view(H, dn + dv, c)
        s = torch.einsum("bthc,bsc->bths", torch.einsum("bthd,hdc->bthc", q_nope, w[:, :dn]), c_kv)
        s = (s + torch.einsum("bthr,bsr->bths", q_pe, k_pe)) / math.sqrt(dn + dr)
        keep = torch.arange(c_kv.shape[1], device=x.device) <= torch.arange(past, past + T, device=x.device)[:, None]
        p = s.masked_fill(~keep[:, None, :], float("-inf")).softmax(-1)
        o = torch.einsum("bthc,hdc->bthd", torch.einsum("bths,bsc->bthc", p, c_kv), w[:, dn:])
        return self.wo(o.reshape(B, T, H * dv)), LatentCache(c_kv, k_pe)

    def _decode(self, x, cache):
        if x.shape[1] <= 2:
            return self._step(x, cache)
        half = x.shape[1] // 2
        first, cache = self._decode(x[:, :half], cache)
        second, cache = self._decode(x[:, half:], cache)
        return torch.cat([first, second], 1), cache

    def forward(self, x, cache=None):
        if cache is not None:
            cache = LatentCache(*cache)
        return self._decode(x, cache)
