# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_rope_wrong_tensors
"""Stub helpers kept (rope_cache, apply_rope on one tensor at a time), the rest a compact Qwen2-ish
block with one bool (B, 1, T, T) mask and torch.where; apply_rope is called on the values where the
keys belong: k keeps no position, v is rotated."""
import math

import torch
import torch.nn.functional as F
from torch import nn


def rope_cache(seq_len: int, dim: int, theta: float, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    inv = theta ** (-torch.arange(0, dim, 2, device=device, dtype=torch.float32) / dim)
    ang = torch.arange(seq_len, device=device, dtype=torch.float32)[:, None] * inv[None, :]
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos(), ang.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        return self.weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.h, self.g, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.theta = rope_theta
        self.input_layernorm = RMSNorm(d_model, eps)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * self.d, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.o_proj = nn.Linear(num_heads * self.d, d_model, bias=False)
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def attend(self, x, keep):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.g, self.d).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.g, self.d).transpose(1, 2)
        cos, sin = rope_cache(T, self.d, self.theta, x.device)
        q = apply_rope(q, cos, sin)
        v = apply_rope(v, cos, sin)
        k = k.repeat_interleave(self.h // self.g, dim=1)
        v = v.repeat_interleave(self.h // self.g, dim=1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.d)
        s = torch.where(keep, s, torch.finfo(s.dtype).min)
        o = s.softmax(-1) @ v
        return self.o_proj(o.transpose(1, 2).reshape(B, T, -1))

    def forward(self, x, attention_mask=None):
        T = x.shape[1]
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()[None, None]
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :].bool()
        h = x + self.attend(self.input_layernorm(x), keep)
        y = self.post_attention_layernorm(h)
        return h + self.down_proj(F.silu(self.gate_proj(y)) * self.up_proj(y))
# bug-line: 59
