# attnprep: mla_decode
# expect: passed
"""Correct: fluent method chains everywhere (`x.float().pow(2).mean(-1, keepdim=True).add(eps)
.rsqrt()`, `.unflatten(...).unbind(-1)`, `.masked_fill(...).softmax(-1)`), the absorbed weights from
`wkv_b.weight.unflatten(0, (H, -1))`, the key part applied with matmul against a transposed latent,
the RoPE of the new tokens by a real 2x2 rotation at absolute positions."""

import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x.float().mul(x.float().pow(2).mean(-1, keepdim=True).add(self.eps).rsqrt()).to(x.dtype).mul(self.weight)


def rope_at(x, start, theta):
    """x (B, T, H, r) rotated at positions start .. start + T - 1 (adjacent pairs)."""
    r = x.shape[-1]
    ang = (torch.arange(start, start + x.shape[1], device=x.device).float()[:, None]
           .mul(torch.arange(0, r, 2, device=x.device).float().div(r).mul(-1).exp2()
                .pow(math.log2(theta))))  # (T, r/2)
    cos, sin = ang.cos()[:, None], ang.sin()[:, None]
    a, b = x.float().unflatten(-1, (-1, 2)).unbind(-1)
    return torch.stack((a.mul(cos).sub(b.mul(sin)), a.mul(sin).add(b.mul(cos))), -1).flatten(-2).to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.C = num_heads, kv_lora_rank
        self.nope, self.rope, self.dv, self.theta = qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        past = 0 if cache is None else cache[0].size(1)
        q_nope, q_pe = self.wq_b(self.q_norm(self.wq_a(x))).unflatten(-1, (self.H, -1)).split([self.nope, self.rope], -1)
        latent, k_pe = self.wkv_a(x).split([self.C, self.rope], -1)
        latent = self.kv_norm(latent)
        k_pe = rope_at(k_pe.unsqueeze(2), past, self.theta).squeeze(2)
        if cache is not None:
            latent, k_pe = torch.cat((cache[0], latent), 1), torch.cat((cache[1], k_pe), 1)
        w = self.wkv_b.weight.unflatten(0, (self.H, -1))  # (H, nope + dv, C)
        w_uk, w_uv = w[:, : self.nope], w[:, self.nope:]
        q_lat = q_nope.transpose(1, 2).matmul(w_uk)  # (B, H, T, C)
        S = latent.size(1)
        allowed = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(past)
        probs = (q_lat.matmul(latent.unsqueeze(1).transpose(-1, -2))
                 .add(rope_at(q_pe, past, self.theta).transpose(1, 2).matmul(k_pe.unsqueeze(1).transpose(-1, -2)))
                 .mul((self.nope + self.rope) ** -0.5)
                 .masked_fill(~allowed, float("-inf"))
                 .softmax(-1))  # (B, H, T, S)
        out = probs.matmul(latent.unsqueeze(1)).matmul(w_uv.transpose(-1, -2))  # (B, H, T, dv)
        return self.wo(out.transpose(1, 2).flatten(2)), (latent, k_pe)
