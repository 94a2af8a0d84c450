# attnprep: mla
# expect: mask_leak
# diagnosis: mask_fill_zero + scale_d_model
"""A TypedDict `Heads(q, k, v)` returned by a `_heads()` method, the masks applied with
`scores.masked_fill(blocked, 0.0)` (as if a zero score meant "no attention"), the scale taken
from the model width: 1/sqrt(d_model) instead of 1/sqrt(nope + rope)."""

import math
from typing import TypedDict

import torch
import torch.nn as nn


class Heads(TypedDict):
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


def rope(x, theta):
    T, r = x.shape[1], x.shape[-1]
    inv = theta ** (-torch.arange(0, r, 2, dtype=torch.float32, device=x.device) / r)
    ang = (torch.arange(T, dtype=torch.float32, device=x.device)[:, None] * inv)[None, :, None, :]
    a, b = x.float()[..., 0::2], x.float()[..., 1::2]
    return torch.stack([a * ang.cos() - b * ang.sin(), a * ang.sin() + b * ang.cos()], -1).flatten(-2).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.d_model = d_model
        self.H, self.c, self.dn, self.dr, self.dv, self.theta = (num_heads, kv_lora_rank, qk_nope_head_dim,
                                                                 qk_rope_head_dim, v_head_dim, rope_theta)
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def _heads(self, x) -> Heads:
        B, T, _ = x.shape
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.H, self.dn + self.dr)
        c_kv, k_pe = self.wkv_a(x).split([self.c, self.dr], -1)
        kv = self.wkv_b(self.kv_norm(c_kv)).view(B, T, self.H, self.dn + self.dv)
        q = torch.cat([q[..., : self.dn], rope(q[..., self.dn:], self.theta)], -1)
        k = torch.cat([kv[..., : self.dn], rope(k_pe[:, :, None], self.theta).expand(B, T, self.H, self.dr)], -1)
        return {"q": q.transpose(1, 2), "k": k.transpose(1, 2), "v": kv[..., self.dn:].transpose(1, 2)}

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        hd = self._heads(x)
        s = hd["q"] @ hd["k"].transpose(-1, -2) / math.sqrt(self.d_model)
        blocked = torch.zeros(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            blocked |= ~attention_mask[:, None, None, :]
        if is_causal:
            blocked |= torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        s = s.masked_fill(blocked, 0.0)
        return self.wo((s.softmax(-1) @ hd["v"]).transpose(1, 2).reshape(B, T, self.H * self.dv))
# bug-line: 67, 73
