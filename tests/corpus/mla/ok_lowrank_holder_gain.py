# attnprep: mla
# expect: passed
"""Correct MLA, Phi / type-hinted style: each low-rank down-projection is a small module holding its
matrix and, beside it, the RMSNorm gain of its latent as a bare 1-D nn.Parameter; everything is
called through F.linear."""
import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn


class LowRankDown(nn.Module):
    """x -> RMSNorm(x @ W^T) for the latent part: weight (rank + extra, d_in), norm_weight (rank,)."""

    def __init__(self, d_in: int, rank: int, extra: int = 0, eps: float = 1e-6) -> None:
        super().__init__()
        self.rank, self.eps = rank, eps
        self.weight = nn.Parameter(torch.empty(rank + extra, d_in).normal_(std=0.02))
        self.norm_weight = nn.Parameter(torch.ones(rank))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = F.linear(x, self.weight)
        latent, rest = h[..., : self.rank], h[..., self.rank:]
        var = latent.float().pow(2).mean(-1, keepdim=True)
        latent = (latent.float() * torch.rsqrt(var + self.eps)).to(x.dtype) * self.norm_weight
        return latent, rest


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, q_lora_rank: int, kv_lora_rank: int,
                 qk_nope_head_dim: int, qk_rope_head_dim: int, v_head_dim: int, rope_theta: float = 10000.0) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.nope, self.rope, self.v_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.rope_theta = rope_theta
        self.q_down = LowRankDown(d_model, q_lora_rank)
        self.q_up = nn.Parameter(torch.empty(num_heads * (qk_nope_head_dim + qk_rope_head_dim), q_lora_rank).normal_(std=0.02))
        self.kv_down = LowRankDown(d_model, kv_lora_rank, extra=qk_rope_head_dim)
        self.kv_up = nn.Parameter(torch.empty(num_heads * (qk_nope_head_dim + v_head_dim), kv_lora_rank).normal_(std=0.02))
        self.out = nn.Parameter(torch.empty(d_model, num_heads * v_head_dim).normal_(std=0.02))

    def _rope(self, x: torch.Tensor) -> torch.Tensor:
        """Interleaved pairs (x[2i], x[2i+1]) rotated by t·theta^(-2i/r); x (B, T, *, r)."""
        T, r = x.shape[1], x.shape[-1]
        inv_freq = self.rope_theta ** (-torch.arange(0, r, 2, device=x.device, dtype=torch.float32) / r)
        angle = torch.arange(T, device=x.device, dtype=torch.float32)[:, None] * inv_freq  # (T, r/2)
        shape = (1, T) + (1,) * (x.dim() - 3) + (r // 2,)
        cos, sin = angle.cos().view(shape), angle.sin().view(shape)
        x1, x2 = x.float()[..., 0::2], x.float()[..., 1::2]
        return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2).to(x.dtype)

    def forward(self, x: torch.Tensor, attention_mask: Optional[torch.Tensor] = None, is_causal: bool = False) -> torch.Tensor:
        B, T, _ = x.shape
        H, nope, rope, dv = self.num_heads, self.nope, self.rope, self.v_dim
        q_latent, _ = self.q_down(x)
        q = F.linear(q_latent, self.q_up).view(B, T, H, nope + rope)
        q_nope, q_pe = q.split([nope, rope], dim=-1)
        kv_latent, k_pe = self.kv_down(x)  # (B, T, c), (B, T, rope)
        kv = F.linear(kv_latent, self.kv_up).view(B, T, H, nope + dv)
        k_nope, v = kv.split([nope, dv], dim=-1)
        q = torch.cat([q_nope, self._rope(q_pe)], dim=-1)  # (B, T, H, nope + rope)
        k = torch.cat([k_nope, self._rope(k_pe).unsqueeze(2).expand(B, T, H, rope)], dim=-1)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(nope + rope)
        keep = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        if is_causal:
            keep = keep & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
        out = torch.einsum("bhqk,bkhd->bqhd", scores.softmax(dim=-1), v).reshape(B, T, H * dv)
        return F.linear(out, self.out)
