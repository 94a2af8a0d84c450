# attnprep: mla
# expect: wrong_output
# diagnosis: rope_cos_sin_swapped
"""MLA with a hand-written real-arithmetic RoPE on adjacent pairs that swaps cos and sin: out1 = x1*sin - x2*cos, out2 = x1*cos + x2*sin."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rope_cos_sin(dim, seq_len, theta=10000.0, device=None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, device=device).float() / dim))  # (dim/2,)
    angles = torch.outer(torch.arange(seq_len, device=device).float(), inv_freq)  # (T, dim/2)
    return angles.cos(), angles.sin()


def apply_rope(x, cos, sin):
    # x: (B, T, H, dim); cos/sin: (T, dim/2)
    cos = cos[None, :, None, :]
    sin = sin[None, :, None, :]
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out1 = x1 * sin - x2 * cos
    out2 = x1 * cos + x2 * sin
    return torch.stack([out1, out2], dim=-1).flatten(-2)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.nope = qk_nope_head_dim
        self.rope = qk_rope_head_dim
        self.v_dim = v_head_dim
        self.rope_theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank, eps=1e-6)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank, eps=1e-6)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        H = self.num_heads
        cos, sin = rope_cos_sin(self.rope, T, self.rope_theta, x.device)

        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, self.nope + self.rope)
        q_nope, q_pe = q.split([self.nope, self.rope], dim=-1)
        q_pe = apply_rope(q_pe, cos, sin)  # (B, T, H, rope)

        c_kv, k_pe = self.wkv_a(x).split([self.kv_lora_rank, self.rope], dim=-1)
        k_pe = apply_rope(k_pe.unsqueeze(2), cos, sin)  # (B, T, 1, rope)
        kv = self.wkv_b(self.kv_norm(c_kv)).view(B, T, H, self.nope + self.v_dim)
        k_nope, v = kv.split([self.nope, self.v_dim], dim=-1)

        q = torch.cat([q_nope, q_pe], dim=-1).transpose(1, 2)  # (B, H, T, nope+rope)
        k = torch.cat([k_nope, k_pe.expand(B, T, H, self.rope)], dim=-1).transpose(1, 2)
        v = v.transpose(1, 2)  # (B, H, T, v)

        scores = q @ k.transpose(-2, -1) / math.sqrt(self.nope + self.rope)  # (B, H, T, T)
        if is_causal:
            causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
            scores = scores.masked_fill(~causal, float("-inf"))
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        attn = scores.softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(B, T, H * self.v_dim)
        return self.wo(out)
