# attnprep: mla
# expect: wrong_output
# diagnosis: rope_rotate_half
"""MLA that replaces the stub's interleaved RoPE with Llama's rotate_half form, pairing x[i] with x[i + rope/2] instead of adjacent pairs."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate_half(x):
    """Rotates half the hidden dims of the input."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def rope_cos_sin(dim, seq_len, theta=10000.0, device=None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64, device=device).float() / dim))
    t = torch.arange(seq_len, device=device).float()
    freqs = torch.outer(t, inv_freq)  # (T, dim/2)
    emb = torch.cat((freqs, freqs), dim=-1)  # (T, dim)
    return emb.cos(), emb.sin()


def apply_rotary_pos_emb(x, cos, sin):
    # x: (B, T, H, dim); cos/sin: (T, dim)
    cos = cos[None, :, None, :]
    sin = sin[None, :, None, :]
    return (x * cos) + (rotate_half(x) * sin)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.to(torch.promote_types(x.dtype, torch.float32))
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.qk_nope_head_dim = qk_nope_head_dim
        self.qk_rope_head_dim = qk_rope_head_dim
        self.v_head_dim = v_head_dim
        self.rope_theta = rope_theta
        self.softmax_scale = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank, eps=1e-6)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank, eps=1e-6)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        H, nope, rope, dv = self.num_heads, self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim
        cos, sin = rope_cos_sin(rope, T, self.rope_theta, x.device)

        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, nope + rope)
        q_nope, q_pe = q.split([nope, rope], dim=-1)
        q_pe = apply_rotary_pos_emb(q_pe, cos, sin)

        c_kv, k_pe = self.wkv_a(x).split([self.kv_lora_rank, rope], dim=-1)
        k_pe = apply_rotary_pos_emb(k_pe.unsqueeze(2), cos, sin)  # (B, T, 1, rope)
        kv = self.wkv_b(self.kv_norm(c_kv)).view(B, T, H, nope + dv)
        k_nope, v = kv.split([nope, dv], dim=-1)

        q = torch.cat([q_nope, q_pe], dim=-1).transpose(1, 2)  # (B, H, T, nope+rope)
        k = torch.cat([k_nope, k_pe.expand(B, T, H, rope)], dim=-1).transpose(1, 2)
        v = v.transpose(1, 2)

        scores = q @ k.transpose(-2, -1) * self.softmax_scale
        if is_causal:
            causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
            scores = scores.masked_fill(~causal, float("-inf"))
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        attn = scores.softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(B, T, H * dv)
        return self.wo(out)
