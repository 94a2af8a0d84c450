# attnprep: mla_decode
# expect: structure
# diagnosis: mla_decompressed_prefix
"""functools.reduce to fold the cache update over (cache, new) pairs, a `naive_attend` reused from
the prefill code. The cache is the contract's (c_kv after kv_norm, rotated k_pe), but every step
rebuilds the per-head keys and values of the whole prefix with wkv_b (the naive path), which the
absorbed decode exists to avoid."""

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


def rope(x, theta, start):
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

    def naive_attend(self, q, c_kv, k_pe, start):
        B, T, H, _ = q.shape
        S = c_kv.shape[1]
        kv = self.wkv_b(c_kv).view(B, S, H, self.dn + self.dv)
        k = torch.cat([kv[..., : self.dn], k_pe[:, :, None].expand(B, S, H, self.dr)], -1)
        s = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(self.dn + self.dr)
        keep = torch.arange(S, device=q.device)[None, :] <= torch.arange(start, start + T, device=q.device)[:, None]
        p = s.masked_fill(~keep, float("-inf")).softmax(-1)
        return torch.einsum("bhts,bshd->bthd", p, kv[..., self.dn:]).reshape(B, T, H * self.dv)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        start = 0 if cache is None else cache[0].shape[1]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.H, self.dn + self.dr)
        q = torch.cat([q[..., : self.dn], rope(q[..., self.dn:], self.theta, start)], -1)
        c_kv, k_pe = self.wkv_a(x).split([self.c, self.dr], -1)
        new = (self.kv_norm(c_kv), rope(k_pe, self.theta, start))
        pairs = [cache, new] if cache is not None else [new]
        c_kv, k_pe = functools.reduce(lambda a, b: (torch.cat([a[0], b[0]], 1), torch.cat([a[1], b[1]], 1)), pairs)
        return self.wo(self.naive_attend(q, c_kv, k_pe, start)), (c_kv, k_pe)
# bug-line: 53
