# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_rope_position_zero
"""typing.NamedTuple for everything a step produces (`Step(q_lat, q_pe, c_kv, k_pe)`), built by a
`_prepare()` method, scored by `_attend()`. The query's rope part is rotated at the absolute
positions start .. start + T - 1; the new key's k_pe is rotated with the default start 0, so the
cached keys all sit at positions 0 .. T_new - 1 of their own step."""

import math
from typing import NamedTuple

import torch
import torch.nn as nn


class Step(NamedTuple):
    q_lat: torch.Tensor
    q_pe: torch.Tensor
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


def rope(x, theta, start=0):
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

    def _w(self):
        return self.wkv_b.weight.view(self.H, self.dn + self.dv, self.c)

    def _prepare(self, x, start):
        B, T, _ = x.shape
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.H, self.dn + self.dr)
        q_lat = torch.einsum("bthd,hdc->bthc", q[..., : self.dn], self._w()[:, : self.dn])
        c_kv, k_pe = self.wkv_a(x).split([self.c, self.dr], -1)
        return Step(q_lat, rope(q[..., self.dn:], self.theta, start), self.kv_norm(c_kv), rope(k_pe, self.theta))

    def _attend(self, st, c_kv, k_pe, start):
        T, S = st.q_lat.shape[1], c_kv.shape[1]
        s = torch.einsum("bthc,bsc->bths", st.q_lat, c_kv) + torch.einsum("bthr,bsr->bths", st.q_pe, k_pe)
        s = s / math.sqrt(self.dn + self.dr)
        keep = torch.arange(S, device=s.device)[None, :] <= torch.arange(start, start + T, device=s.device)[:, None]
        p = s.masked_fill(~keep[:, None, :], float("-inf")).softmax(-1)
        o = torch.einsum("bthc,hdc->bthd", torch.einsum("bths,bsc->bthc", p, c_kv), self._w()[:, self.dn:])
        return self.wo(o.flatten(2))

    def forward(self, x, cache=None):
        start = 0 if cache is None else cache[0].shape[1]
        st = self._prepare(x, start)
        c_kv, k_pe = st.c_kv, st.k_pe
        if cache is not None:
            c_kv, k_pe = torch.cat([cache[0], c_kv], 1), torch.cat([cache[1], k_pe], 1)
        return self._attend(st, c_kv, k_pe, start), (c_kv, k_pe)
# bug-line: 65
