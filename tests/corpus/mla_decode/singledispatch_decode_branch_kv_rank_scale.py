# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_scale_kv_rank
"""functools.singledispatchmethod on the cache's type: `_run.register(type(None))` for the prefill
and `_run.register(tuple)` for decode steps, each written out in full. The prefill branch scales by
1/sqrt(nope + rope); the decode branch, written from the latent-space view of the scores, scales by
1/sqrt(kv_lora_rank). The prefill's outputs and every cache are right; each step after it is not."""

import functools
import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


def rope(x, start, theta):
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

    def _parts(self, x, start):
        B, T, _ = x.shape
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.H, self.dn + self.dr)
        w = self.wkv_b.weight.view(self.H, self.dn + self.dv, self.c)
        q_lat = torch.einsum("bthd,hdc->bthc", q[..., : self.dn], w[:, : self.dn])
        lat, k_pe = self.wkv_a(x).split([self.c, self.dr], -1)
        return q_lat, rope(q[..., self.dn:], start, self.theta), self.kv_norm(lat), rope(k_pe, start, self.theta), w

    def _attend(self, q_lat, q_pe, lat, k_pe, w, start, scale):
        T, S = q_lat.shape[1], lat.shape[1]
        s = (torch.einsum("bthc,bsc->bths", q_lat, lat) + torch.einsum("bthr,bsr->bths", q_pe, k_pe)) * scale
        keep = torch.arange(S, device=s.device)[None, :] <= torch.arange(start, start + T, device=s.device)[:, None]
        p = s.masked_fill(~keep[:, None, :], float("-inf")).softmax(-1)
        o = torch.einsum("bthc,hdc->bthd", torch.einsum("bths,bsc->bthc", p, lat), w[:, self.dn:])
        return self.wo(o.flatten(2))

    @functools.singledispatchmethod
    def _run(self, cache, x):
        raise TypeError(type(cache))

    @_run.register(type(None))
    def _(self, cache, x):
        q_lat, q_pe, lat, k_pe, w = self._parts(x, 0)
        return self._attend(q_lat, q_pe, lat, k_pe, w, 0, 1.0 / math.sqrt(self.dn + self.dr)), (lat, k_pe)

    @_run.register(tuple)
    def _(self, cache, x):
        start = cache[0].shape[1]
        q_lat, q_pe, lat, k_pe, w = self._parts(x, start)
        lat, k_pe = torch.cat([cache[0], lat], 1), torch.cat([cache[1], k_pe], 1)
        return self._attend(q_lat, q_pe, lat, k_pe, w, start, 1.0 / math.sqrt(self.c)), (lat, k_pe)

    def forward(self, x, cache=None):
        return self._run(tuple(cache) if cache is not None else None, x)
# bug-line: 80
