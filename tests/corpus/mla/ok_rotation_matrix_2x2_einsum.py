# attnprep: mla
# expect: passed
"""Correct: DeepSeek's interleaved-pair RoPE written as a real 2x2 rotation matrix per (position,
pair), R = [[cos, -sin], [sin, cos]] stacked to (T, r/2, 2, 2), applied with einsum '...ij,...j->...i'
on x viewed as pairs; the rest of MLA with bmm on heads folded into the batch and mT."""

import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotation(T, r, theta, device):
    inv = theta ** (-torch.arange(0, r, 2, device=device, dtype=torch.float32) / r)  # (r/2,)
    ang = torch.arange(T, device=device, dtype=torch.float32)[:, None] * inv[None, :]  # (T, r/2)
    c, s = ang.cos(), ang.sin()
    return torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2)  # (T, r/2, 2, 2)


def rotate(x, R):  # x (B, T, H, r)
    pairs = x.unflatten(-1, (-1, 2))  # (B, T, H, r/2, 2)
    return torch.einsum("tpij,bthpj->bthpi", R, pairs).flatten(-2)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.c = num_heads, kv_lora_rank
        self.nope, self.rope, self.dv, self.theta = qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        H, nope, rope, dv = self.H, self.nope, self.rope, self.dv
        R = rotation(T, rope, self.theta, x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, nope + rope)
        q = torch.cat([q[..., :nope], rotate(q[..., nope:], R)], -1)
        ckv, kpe = self.wkv_a(x).split([self.c, rope], -1)
        kpe = rotate(kpe[:, :, None, :], R)  # (B, T, 1, rope)
        kv = self.wkv_b(self.kv_norm(ckv)).view(B, T, H, nope + dv)
        k = torch.cat([kv[..., :nope], kpe.expand(B, T, H, rope)], -1)
        v = kv[..., nope:]
        fold = lambda t: t.transpose(1, 2).reshape(B * H, T, t.shape[-1])
        s = torch.bmm(fold(q), fold(k).mT).view(B, H, T, T) / math.sqrt(nope + rope)
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        o = torch.bmm(s.softmax(-1).view(B * H, T, T), fold(v)).view(B, H, T, dv)
        return self.wo(o.transpose(1, 2).reshape(B, T, H * dv))
