# attnprep: mla
# expect: wrong_output
# diagnosis: mla_split_order
"""Flax NNX ported to torch: a frozen dataclass config built in __init__, every projection an einsum
on the layer's kernel (`dense(x, layer)` = "btd,kd->btk"), NNX's RMSNorm parameter named `scale`,
shapes kept as (batch, length, heads, features) until the scores, RoPE written with timescales as
flax's examples do. The joint kv down-projection is unpacked as [k_pe; c_kv] where DeepSeek lays it
out as [c_kv; k_pe]."""

import dataclasses
import math

import torch
import torch.nn as nn


@dataclasses.dataclass(frozen=True)
class MLAConfig:
    d_model: int
    num_heads: int
    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    rope_theta: float = 10000.0

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim


def dense(x: torch.Tensor, layer: nn.Linear) -> torch.Tensor:
    return torch.einsum("btd,kd->btk", x, layer.weight)


class RMSNorm(nn.Module):
    def __init__(self, num_features: int, epsilon: float = 1e-6):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(num_features))
        self.epsilon = epsilon

    def forward(self, x):
        x32 = x.float()
        y = x32 * torch.rsqrt(torch.mean(x32 * x32, dim=-1, keepdim=True) + self.epsilon)
        return y.to(x.dtype) * self.scale


def rope_interleaved(x: torch.Tensor, theta: float) -> torch.Tensor:
    """x (b, t, n, r): the pairs (2i, 2i+1) rotated by t * theta^(-2i/r)."""
    t, r = x.shape[1], x.shape[-1]
    timescale = theta ** (torch.arange(0, r, 2, device=x.device, dtype=torch.float32) / r)  # (r/2,)
    sinusoid = torch.arange(t, device=x.device, dtype=torch.float32)[:, None] / timescale  # (t, r/2)
    sin, cos = torch.sin(sinusoid)[:, None], torch.cos(sinusoid)[:, None]  # (t, 1, r/2)
    first, second = x.float()[..., 0::2], x.float()[..., 1::2]
    out = torch.stack([first * cos - second * sin, first * sin + second * cos], dim=-1)
    return out.flatten(-2).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        cfg = self.cfg = MLAConfig(d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                                   qk_rope_head_dim, v_head_dim, rope_theta)
        self.wq_a = nn.Linear(cfg.d_model, cfg.q_lora_rank, bias=False)
        self.q_norm = RMSNorm(cfg.q_lora_rank)
        self.wq_b = nn.Linear(cfg.q_lora_rank, cfg.num_heads * cfg.qk_head_dim, bias=False)
        self.wkv_a = nn.Linear(cfg.d_model, cfg.kv_lora_rank + cfg.qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(cfg.kv_lora_rank)
        self.wkv_b = nn.Linear(cfg.kv_lora_rank, cfg.num_heads * (cfg.qk_nope_head_dim + cfg.v_head_dim), bias=False)
        self.wo = nn.Linear(cfg.num_heads * cfg.v_head_dim, cfg.d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        cfg = self.cfg
        b, t, _ = x.shape
        n, nope, rope, dv = cfg.num_heads, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim
        q = dense(self.q_norm(dense(x, self.wq_a)), self.wq_b).reshape(b, t, n, cfg.qk_head_dim)
        q_nope, q_pe = q[..., :nope], rope_interleaved(q[..., nope:], cfg.rope_theta)
        kv_a = dense(x, self.wkv_a)  # (b, t, kv_lora_rank + rope)
        k_pe, c_kv = kv_a[..., :rope], kv_a[..., rope:]
        k_pe = rope_interleaved(k_pe[:, :, None, :], cfg.rope_theta)  # (b, t, 1, rope)
        kv = dense(self.kv_norm(c_kv), self.wkv_b).reshape(b, t, n, nope + dv)
        k_nope, value = kv[..., :nope], kv[..., nope:]
        logits = (torch.einsum("bqnd,bknd->bnqk", q_nope, k_nope)
                  + torch.einsum("bqnr,bkxr->bnqk", q_pe, k_pe)) / math.sqrt(cfg.qk_head_dim)
        allowed = torch.ones(b, 1, t, t, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        if is_causal:
            allowed = allowed & torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        logits = torch.where(allowed, logits, torch.finfo(logits.dtype).min)
        weights = torch.softmax(logits, dim=-1)  # (b, n, q, k)
        out = torch.einsum("bnqk,bknd->bqnd", weights, value).reshape(b, t, n * dv)
        return dense(out, self.wo)
# bug-line: 81
