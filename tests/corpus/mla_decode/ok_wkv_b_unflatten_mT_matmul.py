# attnprep: mla_decode
# expect: passed
"""Correct absorbed decode: wkv_b.weight.unflatten(0, (H, nope + v)) split into W_UK (H, nope, c)
and W_UV (H, v, c); q_nope absorbed with matmul against W_UK (4-d broadcast over batch), the
scores over [c_kv; k_pe] as two matmuls with .mT, the output through W_UV.mT; RoPE as real pairs."""

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
        return self.weight * (h * torch.rsqrt(h.square().mean(-1, keepdim=True) + self.eps)).to(x.dtype)


def rope_pairs(x, pos, theta):  # x (B, T, ..., r), pos (T,)
    r = x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, r, 2, device=x.device, dtype=torch.float32) / r)
    ang = pos.float()[:, None] * inv  # (T, r/2)
    shape = (1, ang.shape[0]) + (1,) * (x.dim() - 3) + (r // 2,)
    c, s = ang.cos().view(shape), ang.sin().view(shape)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * c - x2 * s, x1 * s + x2 * c], -1).flatten(-2)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.c, self.nope, self.rope, self.dv = num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim
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
        H, nope, rope, dv = self.H, self.nope, self.rope, self.dv
        past = 0 if cache is None else cache[0].shape[1]
        pos = torch.arange(past, past + T, device=x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, nope + rope)
        q_nope, q_pe = q.split([nope, rope], -1)
        q_pe = rope_pairs(q_pe, pos, self.theta)
        c_kv, k_pe = self.wkv_a(x).split([self.c, rope], -1)
        c_kv = self.kv_norm(c_kv)
        k_pe = rope_pairs(k_pe[:, :, None, :], pos, self.theta)[:, :, 0]
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], 1)
            k_pe = torch.cat([cache[1], k_pe], 1)
        w = self.wkv_b.weight.unflatten(0, (H, nope + dv))  # (H, nope+dv, c)
        w_uk, w_uv = w[:, :nope], w[:, nope:]  # (H, nope, c), (H, dv, c)
        q_lat = q_nope.transpose(1, 2) @ w_uk  # (B, H, T, nope) @ (H, nope, c) -> (B, H, T, c)
        s = q_lat @ c_kv[:, None].mT + q_pe.transpose(1, 2) @ k_pe[:, None].mT  # (B, H, T, S)
        s = s / math.sqrt(nope + rope)
        S = c_kv.shape[1]
        s = s.masked_fill(torch.arange(S, device=x.device)[None, :] > pos[:, None], float("-inf"))
        o_lat = s.softmax(-1) @ c_kv[:, None]  # (B, H, T, c)
        o = o_lat @ w_uv.mT  # (B, H, T, dv)
        return self.wo(o.transpose(1, 2).reshape(B, T, H * dv)), (c_kv, k_pe)
