# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_cache_before_norm
"""NamedTuple cache; the latent is cached before kv_norm (normalised only for the scores)."""
import math
from dataclasses import dataclass
from typing import NamedTuple, Optional

import torch
import torch.nn as nn


class LatentCache(NamedTuple):
    kv: torch.Tensor
    pe: torch.Tensor


@dataclass(frozen=True)
class Dims:
    heads: int
    rank: int
    nope: int
    rope: int
    v: int


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        f = x.float()
        return (f * (f.square().mean(-1, keepdim=True) + self.eps).rsqrt()).to(x.dtype) * self.weight


def rope(x, pos, theta):  # x (..., T, [h,] r) with T at dim 1
    r = x.shape[-1]
    inv = theta ** (-torch.arange(0, r, 2, dtype=torch.float32, device=x.device) / r)
    ang = pos.float()[:, None] * inv
    cis = torch.polar(torch.ones_like(ang), ang)
    shape = [1, pos.numel()] + [1] * (x.dim() - 3) + [r // 2]
    z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], r // 2, 2).contiguous())
    return torch.view_as_real(z * cis.view(shape)).flatten(-2).to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.d = Dims(num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim)
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache: Optional[tuple] = None):
        d = self.d
        B, T, _ = x.shape
        old = LatentCache(*cache) if cache is not None else None
        past = 0 if old is None else old.kv.shape[1]
        pos = torch.arange(past, past + T, device=x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, d.heads, d.nope + d.rope)
        qn, qp = q.split([d.nope, d.rope], -1)
        qp = rope(qp, pos, self.theta)
        kv, kp = self.wkv_a(x).split([d.rank, d.rope], -1)
        new = LatentCache(kv, rope(kp, pos, self.theta))
        full_raw = full = new if old is None else LatentCache(torch.cat([old.kv, new.kv], 1), torch.cat([old.pe, new.pe], 1))
        full = LatentCache(self.kv_norm(full.kv), full.pe)
        w = self.wkv_b.weight.unflatten(0, (d.heads, d.nope + d.v))
        ql = torch.einsum("xyzn,znr->xyzr", qn, w[:, :d.nope])                      # absorbed
        att = torch.einsum("xyzr,xwr->xyzw", ql, full.kv) + torch.einsum("xyzp,xwp->xyzw", qp, full.pe)
        att = att * (d.nope + d.rope) ** -0.5
        S = full.kv.shape[1]
        allowed = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(past)
        att = att.masked_fill(~allowed[:, None, :], torch.finfo(att.dtype).min)
        o = torch.einsum("xyzw,xwr->xyzr", att.softmax(-1), full.kv)
        o = torch.einsum("xyzr,zvr->xyzv", o, w[:, d.nope:])
        return self.wo(o.reshape(B, T, -1)), (full_raw.kv, full.pe)
# bug-line: 72
