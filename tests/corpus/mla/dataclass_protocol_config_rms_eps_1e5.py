# attnprep: mla
# expect: wrong_output
# diagnosis: norm_eps_convention
"""dataclasses + typing.Protocol: an `MLAConfig` frozen dataclass built from the constructor's
arguments (with its own `rms_norm_eps` field, the 1e-5 of a Llama-2 config), a `Norm` Protocol the
two latent norms satisfy, `cached_property`-free plain attributes. Everything else is DeepSeek's
naive path. The latent RMSNorms take eps from the config: 1e-5 instead of the contract's 1e-6."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import torch
import torch.nn as nn


class Norm(Protocol):
    def __call__(self, x: torch.Tensor) -> torch.Tensor: ...


@dataclass(frozen=True)
class MLAConfig:
    hidden_size: int
    num_attention_heads: int
    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim


class LatentRMSNorm(nn.Module):
    def __init__(self, width: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.variance_epsilon = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(x.dtype)


def rotate_pairs(x: torch.Tensor, base: float) -> torch.Tensor:
    """x (B, T, H, r): (x[2i], x[2i+1]) rotated by t * base^(-2i/r)."""
    T, r = x.shape[1], x.shape[-1]
    inv = torch.pow(base, -torch.arange(0, r, 2, dtype=torch.float32, device=x.device) / r)
    ang = torch.einsum("t,f->tf", torch.arange(T, dtype=torch.float32, device=x.device), inv)
    cos, sin = ang.cos()[:, None, :], ang.sin()[:, None, :]
    ev, od = x.float()[..., ::2], x.float()[..., 1::2]
    return torch.stack((ev * cos - od * sin, ev * sin + od * cos), -1).flatten(-2).type_as(x)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        cfg = self.config = MLAConfig(d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                                      qk_rope_head_dim, v_head_dim, rope_theta)
        self.wq_a = nn.Linear(cfg.hidden_size, cfg.q_lora_rank, bias=False)
        self.q_norm: Norm = LatentRMSNorm(cfg.q_lora_rank, cfg.rms_norm_eps)
        self.wq_b = nn.Linear(cfg.q_lora_rank, cfg.num_attention_heads * cfg.qk_head_dim, bias=False)
        self.wkv_a = nn.Linear(cfg.hidden_size, cfg.kv_lora_rank + cfg.qk_rope_head_dim, bias=False)
        self.kv_norm: Norm = LatentRMSNorm(cfg.kv_lora_rank, cfg.rms_norm_eps)
        self.wkv_b = nn.Linear(cfg.kv_lora_rank, cfg.num_attention_heads * (cfg.qk_nope_head_dim + cfg.v_head_dim), bias=False)
        self.wo = nn.Linear(cfg.num_attention_heads * cfg.v_head_dim, cfg.hidden_size, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        cfg = self.config
        B, T, _ = x.shape
        H, dn, dr, dv = cfg.num_attention_heads, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, cfg.qk_head_dim)
        q_nope, q_pe = torch.split(q, [dn, dr], dim=-1)
        c_kv, k_pe = torch.split(self.wkv_a(x), [cfg.kv_lora_rank, dr], dim=-1)
        kv = self.wkv_b(self.kv_norm(c_kv)).view(B, T, H, dn + dv)
        k_nope, v = torch.split(kv, [dn, dv], dim=-1)
        q_pe = rotate_pairs(q_pe, cfg.rope_theta)
        k_pe = rotate_pairs(k_pe[:, :, None], cfg.rope_theta)
        q = torch.cat([q_nope, q_pe], -1).permute(0, 2, 1, 3)
        k = torch.cat([k_nope, k_pe.expand(-1, -1, H, -1)], -1).permute(0, 2, 1, 3)
        v = v.permute(0, 2, 1, 3)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(cfg.qk_head_dim)
        blocked = torch.zeros(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            blocked = blocked | ~attention_mask[:, None, None, :]
        if is_causal:
            blocked = blocked | torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(blocked, float("-inf")).softmax(-1)
        out = (att @ v).permute(0, 2, 1, 3).reshape(B, T, H * dv)
        return self.wo(out)
# bug-line: 33
