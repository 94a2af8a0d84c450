# attnprep: mla
# expect: wrong_output
# diagnosis: mla_norm_skipped + mla_split_order
"""Type-annotated dataclass config (frozen, slots), helpers with full signatures, the naive MLA."""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


@dataclass(frozen=True, slots=True)
class MLAConfig:
    d_model: int
    n_heads: int
    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    rope_theta: float = 10000.0

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim


def rope_angles(dim: int, seq_len: int, theta: float, device: torch.device) -> tuple[Tensor, Tensor]:
    inv = theta ** (-torch.arange(0, dim, 2, dtype=torch.float32, device=device) / dim)
    ang = torch.arange(seq_len, dtype=torch.float32, device=device)[:, None] * inv[None, :]
    return ang.cos(), ang.sin()


def rotate_pairs(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x (B, T, H, r): the pair (x[2i], x[2i+1]) turned by the angle of its position."""
    x1, x2 = x[..., 0::2].float(), x[..., 1::2].float()
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.stack([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1).flatten(-2).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps: float = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, q_lora_rank: int, kv_lora_rank: int, qk_nope_head_dim: int,
                 qk_rope_head_dim: int, v_head_dim: int, rope_theta: float = 10000.0) -> None:
        super().__init__()
        cfg = MLAConfig(d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                        v_head_dim, rope_theta)
        self.cfg: MLAConfig = cfg
        self.wq_a = nn.Linear(cfg.d_model, cfg.q_lora_rank, bias=False)
        self.q_norm = RMSNorm(cfg.q_lora_rank)
        self.wq_b = nn.Linear(cfg.q_lora_rank, cfg.n_heads * cfg.qk_head_dim, bias=False)
        self.wkv_a = nn.Linear(cfg.d_model, cfg.kv_lora_rank + cfg.qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(cfg.kv_lora_rank)
        self.wkv_b = nn.Linear(cfg.kv_lora_rank, cfg.n_heads * (cfg.qk_nope_head_dim + cfg.v_head_dim), bias=False)
        self.wo = nn.Linear(cfg.n_heads * cfg.v_head_dim, cfg.d_model, bias=False)

    def forward(self, x: Tensor, attention_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        cfg: MLAConfig = self.cfg
        B, T, _ = x.shape
        H, nope, rope, dv = cfg.n_heads, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim
        cos, sin = rope_angles(rope, T, cfg.rope_theta, x.device)
        q: Tensor = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, cfg.qk_head_dim)
        q_nope, q_pe = q.split([nope, rope], dim=-1)
        q_pe = rotate_pairs(q_pe, cos, sin)
        k_pe, c_kv = self.wkv_a(x).split([rope, cfg.kv_lora_rank], dim=-1)
        k_pe = rotate_pairs(k_pe[:, :, None, :], cos, sin)
        kv: Tensor = self.wkv_b(c_kv).view(B, T, H, nope + dv)
        k_nope, v = kv.split([nope, dv], dim=-1)
        q_full: Tensor = torch.cat([q_nope, q_pe], dim=-1).transpose(1, 2)
        k_full: Tensor = torch.cat([k_nope, k_pe.expand(-1, -1, H, -1)], dim=-1).transpose(1, 2)
        scores: Tensor = (q_full @ k_full.transpose(-2, -1)) / math.sqrt(cfg.qk_head_dim)
        allowed: Tensor = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            allowed = allowed.tril()
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        scores = scores.masked_fill(~allowed, float("-inf"))
        out: Tensor = F.softmax(scores, dim=-1) @ v.transpose(1, 2)
        return self.wo(out.transpose(1, 2).reshape(B, T, H * dv))
# bug-line: 79, 81
