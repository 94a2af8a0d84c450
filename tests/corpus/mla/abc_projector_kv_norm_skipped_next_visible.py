# attnprep: mla
# expect: mask_leak
# diagnosis: mla_norm_skipped + causal_leaks_next
"""abc.ABC `LatentProjector` with `QueryPath` / `KeyValuePath` subclasses owning their layers, the
attention core a free function. Two slips: the key/value path feeds c_kv to wkv_b without kv_norm
(the layer exists, it is never called), and the causal mask is triu(2), letting each query see the
next key."""

import abc
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


def rope(x, theta):
    T, r = x.shape[1], x.shape[-1]
    inv = theta ** (-torch.arange(0, r, 2, dtype=torch.float32, device=x.device) / r)
    ang = (torch.arange(T, dtype=torch.float32, device=x.device)[:, None] * inv)[None, :, None, :]
    a, b = x.float()[..., 0::2], x.float()[..., 1::2]
    return torch.stack([a * ang.cos() - b * ang.sin(), a * ang.sin() + b * ang.cos()], -1).flatten(-2).to(x.dtype)


class LatentProjector(abc.ABC):
    @abc.abstractmethod
    def project(self, x): ...


class MultiHeadLatentAttention(nn.Module, LatentProjector):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.c, self.dn, self.dr, self.dv, self.theta = (num_heads, kv_lora_rank, qk_nope_head_dim,
                                                                 qk_rope_head_dim, v_head_dim, rope_theta)
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def project(self, x):
        B, T, _ = x.shape
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.H, self.dn + self.dr)
        c_kv, k_pe = self.wkv_a(x).split([self.c, self.dr], -1)
        kv = self.wkv_b(c_kv).view(B, T, self.H, self.dn + self.dv)
        q = torch.cat([q[..., : self.dn], rope(q[..., self.dn:], self.theta)], -1)
        k_pe = rope(k_pe[:, :, None], self.theta).expand(B, T, self.H, self.dr)
        k = torch.cat([kv[..., : self.dn], k_pe], -1)
        return q.transpose(1, 2), k.transpose(1, 2), kv[..., self.dn:].transpose(1, 2)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        q, k, v = self.project(x)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.dn + self.dr)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(2), float("-inf"))
        return self.wo((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, self.H * self.dv))
# bug-line: 58, 71
