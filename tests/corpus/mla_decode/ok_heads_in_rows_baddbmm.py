# attnprep: mla_decode
# expect: passed
"""Correct: the absorbed path with the query heads folded into the rows, (B, T*H, c), so that each
score is one torch.baddbmm against the shared latents onto an additive bias (the offset causal mask
built from two aranges, expanded over the heads and flattened the same way), W_UK / W_UV cut with
unflatten and tensor_split, RoPE on the (even, odd) pairs through torch.view_as_complex on a contiguous
float32 copy."""

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
        h = h * (h.pow(2).mean(-1, keepdim=True) + self.eps).rsqrt()
        return self.weight * h.to(x.dtype)


def rope_complex(x, start, theta):
    """x (B, T, ..., r): the pairs (x[2i], x[2i+1]) as complex numbers, turned by (start + t)·theta^(-2i/r)."""
    T, r = x.shape[1], x.shape[-1]
    inv = theta ** (-torch.arange(0, r, 2, device=x.device, dtype=torch.float32) / r)
    ang = torch.outer(torch.arange(start, start + T, device=x.device, dtype=torch.float32), inv)
    rot = torch.polar(torch.ones_like(ang), ang).view((1, T) + (1,) * (x.dim() - 3) + (r // 2,))
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], r // 2, 2).contiguous())
    return torch.view_as_real(xc * rot).flatten(-2).to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h, self.c = num_heads, kv_lora_rank
        self.dn, self.dr, self.dv = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, dn, dr, dv, c = self.h, self.dn, self.dr, self.dv, self.c
        past = 0 if cache is None else cache[0].shape[1]
        q_nope, q_pe = self.wq_b(self.q_norm(self.wq_a(x))).unflatten(-1, (H, dn + dr)).tensor_split([dn], -1)
        q_pe = rope_complex(q_pe, past, self.theta)  # (B, T, H, dr)
        lat, k_pe = self.wkv_a(x).tensor_split([c], -1)
        lat, k_pe = self.kv_norm(lat), rope_complex(k_pe, past, self.theta)
        if cache is not None:
            lat, k_pe = torch.cat([cache[0], lat], 1), torch.cat([cache[1], k_pe], 1)
        S = lat.shape[1]
        w_uk, w_uv = self.wkv_b.weight.unflatten(0, (H, dn + dv)).tensor_split([dn], 1)  # (H, dn, c), (H, dv, c)
        q_lat = torch.einsum("bthd,hdc->bthc", q_nope, w_uk)
        rows_lat = q_lat.reshape(B, T * H, c)  # row t*H + h
        rows_pe = q_pe.reshape(B, T * H, dr)
        i = torch.arange(T, device=x.device)[:, None] + past
        j = torch.arange(S, device=x.device)[None, :]
        bias = torch.zeros(T, S, dtype=x.dtype, device=x.device).masked_fill(j > i, float("-inf"))
        bias = bias[:, None, :].expand(T, H, S).reshape(1, T * H, S).expand(B, -1, -1)
        scale = 1.0 / math.sqrt(dn + dr)
        scores = torch.baddbmm(bias, rows_lat, lat.transpose(1, 2), alpha=scale)
        scores = torch.baddbmm(scores, rows_pe, k_pe.transpose(1, 2), alpha=scale)  # (B, T*H, S)
        ctx = torch.bmm(scores.softmax(-1), lat).view(B, T, H, c)
        out = torch.einsum("bthc,hdc->bthd", ctx, w_uv).reshape(B, T, H * dv)
        return self.wo(out), (lat, k_pe)
