# attnprep: decoder_layer
# expect: passed
"""Correct: a @torch.jit.script rotate_half, angles in float64 cast to q's dtype, the MLP made before the attention and the second norm before the first; 中文注释."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


@torch.jit.script
def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        out = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return out.type_as(x) * self.weight


class Attention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, theta):
        super().__init__()
        self.nh, self.nkv, self.hd = num_heads, num_kv_heads, d_model // num_heads
        self.theta = theta
        self.q_proj = nn.Linear(d_model, num_heads * self.hd, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(num_heads * self.hd, d_model, bias=False)

    def forward(self, x, attention_mask):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        # 在 float64 里算角度，再转回来
        inv = 1.0 / self.theta ** (torch.arange(0, self.hd, 2, dtype=torch.float64, device=x.device) / self.hd)
        ang = torch.arange(T, dtype=torch.float64, device=x.device)[:, None] * inv[None, :]
        emb = torch.cat([ang, ang], dim=-1)
        cos, sin = emb.cos().to(q.dtype), emb.sin().to(q.dtype)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = torch.repeat_interleave(k, self.nh // self.nkv, dim=1)
        v = torch.repeat_interleave(v, self.nh // self.nkv, dim=1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.hd)
        allowed = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        s = torch.where(allowed, s, -1e9)
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).flatten(2))


class MLP(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.mlp = MLP(d_model, d_ff)           # created before the attention: order is not the contract
        self.self_attn = Attention(d_model, num_heads, num_kv_heads, rope_theta)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.input_layernorm = RMSNorm(d_model, eps)

    def forward(self, x, attention_mask=None):
        x = x + self.self_attn(self.input_layernorm(x), attention_mask)
        return x + self.mlp(self.post_attention_layernorm(x))
