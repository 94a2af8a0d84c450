# attnprep: mla_decode
# expect: passed
"""Correct absorbed decode: the cache returned as a list [c_kv, k_pe], positions as a (T,)
position_ids tensor from the cache length, RoPE by view_as_complex on a float32 copy, W_UK and W_UV
sliced from wkv_b.weight with unflatten and absorbed with torch.matmul against the latent."""

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
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rotate(x, position_ids, theta):  # x (B, T, ..., r)
    r = x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, r, 2, device=x.device, dtype=torch.float32) / r)
    ang = position_ids.float()[:, None] * inv
    f = torch.polar(torch.ones_like(ang), ang)  # (T, r/2)
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], r // 2, 2).contiguous())
    f = f.view(1, f.shape[0], *([1] * (xc.dim() - 3)), r // 2)
    return torch.view_as_real(xc * f).flatten(-2).to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.c, self.nope, self.rope, self.dv, self.theta = (num_heads, kv_lora_rank, qk_nope_head_dim,
                                                                     qk_rope_head_dim, v_head_dim, rope_theta)
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        past = cache[0].shape[1] if cache is not None else 0
        position_ids = torch.arange(past, past + T, device=x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.H, -1)
        q_nope, q_pe = q.split([self.nope, self.rope], dim=-1)
        q_pe = rotate(q_pe, position_ids, self.theta)
        c_kv, k_pe = self.wkv_a(x).split([self.c, self.rope], dim=-1)
        c_kv = self.kv_norm(c_kv)
        k_pe = rotate(k_pe, position_ids, self.theta)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        w = self.wkv_b.weight.unflatten(0, (self.H, self.nope + self.dv))
        w_uk, w_uv = w[:, : self.nope, :], w[:, self.nope:, :]
        q_abs = torch.matmul(q_nope.transpose(1, 2), w_uk)  # (B, H, T, c)
        scores = torch.matmul(q_abs, c_kv.unsqueeze(1).transpose(-1, -2))
        scores = scores + torch.matmul(q_pe.transpose(1, 2), k_pe.unsqueeze(1).transpose(-1, -2))
        scores = scores / math.sqrt(self.nope + self.rope)
        S = c_kv.shape[1]
        future = torch.arange(S, device=x.device)[None, :] > position_ids[:, None]
        scores = scores.masked_fill(future, float("-inf"))
        o = torch.matmul(torch.matmul(scores.softmax(-1), c_kv.unsqueeze(1)), w_uv.transpose(-1, -2))
        return self.wo(o.transpose(1, 2).reshape(B, T, -1)), [c_kv, k_pe]
