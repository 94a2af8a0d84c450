# attnprep: mla
# expect: wrong_output
# diagnosis: mla_scale_partial
"""Type annotations and asserts on every line that changes a shape (a `Final` config, `-> Tensor`
everywhere, `assert q.shape == (B, T, H, nope + rope)`), RoPE by cos / sin tables on even / odd
slices instead of complex numbers. The softmax scale is taken from the no-position part of the head
only: 1 / sqrt(qk_nope_head_dim)."""

from __future__ import annotations

import math
from typing import Final, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps: Final[float] = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        h: Tensor = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


def rope_tables(dim: int, T: int, theta: float, device: torch.device) -> Tuple[Tensor, Tensor]:
    inv: Tensor = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float32, device=device) / dim)
    ang: Tensor = torch.arange(T, dtype=torch.float32, device=device)[:, None] * inv[None, :]
    assert ang.shape == (T, dim // 2)
    return ang.cos(), ang.sin()


def rotate_pairs(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x (B, T, H, r): pairs (x[2i], x[2i+1]) rotated; cos / sin (T, r/2)."""
    assert x.shape[-1] % 2 == 0
    x1, x2 = x[..., 0::2], x[..., 1::2]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    out: Tensor = torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1).flatten(-2)
    assert out.shape == x.shape
    return out


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, q_lora_rank: int, kv_lora_rank: int,
                 qk_nope_head_dim: int, qk_rope_head_dim: int, v_head_dim: int,
                 rope_theta: float = 10000.0) -> None:
        super().__init__()
        self.H: Final[int] = num_heads
        self.c: Final[int] = kv_lora_rank
        self.nope: Final[int] = qk_nope_head_dim
        self.rope: Final[int] = qk_rope_head_dim
        self.dv: Final[int] = v_head_dim
        self.theta: Final[float] = rope_theta
        self.scale: Final[float] = 1.0 / math.sqrt(qk_nope_head_dim)
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x: Tensor, attention_mask: Optional[Tensor] = None, is_causal: bool = False) -> Tensor:
        B, T, _ = x.shape
        H, nope, rope, dv = self.H, self.nope, self.rope, self.dv
        cos, sin = rope_tables(rope, T, self.theta, x.device)

        q: Tensor = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, nope + rope)
        assert q.shape == (B, T, H, nope + rope)
        q_nope, q_pe = q.split([nope, rope], dim=-1)
        q_pe = rotate_pairs(q_pe, cos, sin)

        c_kv, k_pe = self.wkv_a(x).split([self.c, rope], dim=-1)
        assert c_kv.shape == (B, T, self.c) and k_pe.shape == (B, T, rope)
        k_pe = rotate_pairs(k_pe[:, :, None, :], cos, sin)  # (B, T, 1, rope)

        kv: Tensor = self.wkv_b(self.kv_norm(c_kv)).view(B, T, H, nope + dv)
        k_nope, v = kv.split([nope, dv], dim=-1)
        k: Tensor = torch.cat([k_nope, k_pe.expand(-1, -1, H, -1)], dim=-1)
        q = torch.cat([q_nope, q_pe], dim=-1)
        assert q.shape == k.shape == (B, T, H, nope + rope)

        scores: Tensor = torch.einsum("bthd,bshd->bhts", q, k) * self.scale
        assert scores.shape == (B, H, T, T)
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        probs: Tensor = F.softmax(scores, dim=-1)
        out: Tensor = torch.einsum("bhts,bshd->bthd", probs, v)
        assert out.shape == (B, T, H, dv)
        return self.wo(out.reshape(B, T, H * dv))
# bug-line: 59
