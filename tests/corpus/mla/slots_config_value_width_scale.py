# attnprep: mla
# expect: wrong_output
# diagnosis: mla_scale_partial
"""A `__slots__` config object (`Dims`) with the head widths, passed around instead of attributes;
`torch.baddbmm` with the heads folded into the batch and alpha as the scale. The scale is taken
from the value head width, 1/sqrt(v_head_dim), instead of the query/key head 1/sqrt(nope + rope)."""

import math

import torch
import torch.nn as nn


class Dims:
    __slots__ = ("H", "c", "dn", "dr", "dv", "theta")

    def __init__(self, H, c, dn, dr, dv, theta):
        self.H, self.c, self.dn, self.dr, self.dv, self.theta = H, c, dn, dr, dv, theta


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
    z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], r // 2, 2).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(ang), ang)).flatten(-2).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.dims = Dims(num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta)
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        d = self.dims
        B, T, _ = x.shape
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, d.H, d.dn + d.dr)
        c_kv, k_pe = self.wkv_a(x).split([d.c, d.dr], -1)
        kv = self.wkv_b(self.kv_norm(c_kv)).view(B, T, d.H, d.dn + d.dv)
        q = torch.cat([q[..., : d.dn], rope(q[..., d.dn:], d.theta)], -1)
        k = torch.cat([kv[..., : d.dn], rope(k_pe[:, :, None], d.theta).expand(B, T, d.H, d.dr)], -1)
        v = kv[..., d.dn:]
        fold = lambda t: t.transpose(1, 2).reshape(B * d.H, T, t.shape[-1])  # noqa: E731
        bias = torch.zeros(B, d.H, T, T, dtype=x.dtype, device=x.device)
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            bias = bias.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        s = torch.baddbmm(bias.reshape(B * d.H, T, T), fold(q), fold(k).transpose(1, 2), alpha=1 / math.sqrt(d.dv))
        out = torch.bmm(s.softmax(-1), fold(v)).view(B, d.H, T, d.dv).transpose(1, 2).reshape(B, T, d.H * d.dv)
        return self.wo(out)
# bug-line: 68
