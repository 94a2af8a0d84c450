# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_scale_kv_rank
"""Type-hinted MLA decode whose softmax scale is taken over the latent width (kv_lora_rank + rope)
that the absorbed query is scored in, not over the per-head [nope; rope] width."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def precompute_freqs_cis(dim: int, seq_len: int, theta: float = 10000.0, device=None) -> torch.Tensor:
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float64, device=device), freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    x_c = torch.view_as_complex(x.to(torch.float64).unflatten(-1, (-1, 2)).contiguous())
    return torch.view_as_real(x_c * freqs_cis[:, None, :]).flatten(-2).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps: float = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.to(torch.float32)
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model: int, num_heads: int, q_lora_rank: int, kv_lora_rank: int, qk_nope_head_dim: int,
                 qk_rope_head_dim: int, v_head_dim: int, rope_theta: float = 10000.0) -> None:
        super().__init__()
        self.h: int = num_heads
        self.c: int = kv_lora_rank
        self.nope: int = qk_nope_head_dim
        self.rope: int = qk_rope_head_dim
        self.dv: int = v_head_dim
        self.theta: float = rope_theta
        self.scale: float = (kv_lora_rank + qk_rope_head_dim) ** -0.5
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor] | None = None):
        B, T, _ = x.shape
        past: int = 0 if cache is None else cache[0].size(1)
        freqs = precompute_freqs_cis(self.rope, past + T, self.theta, device=x.device)[past:]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.h, self.nope + self.rope)
        q_nope, q_pe = q.split([self.nope, self.rope], -1)
        q_pe = apply_rotary_emb(q_pe, freqs)
        latent, k_pe = self.wkv_a(x).split([self.c, self.rope], -1)
        latent = self.kv_norm(latent)
        k_pe = apply_rotary_emb(k_pe[:, :, None], freqs)[:, :, 0]
        if cache is not None:
            latent = torch.cat((cache[0], latent), 1)
            k_pe = torch.cat((cache[1], k_pe), 1)
        S = latent.size(1)
        w = self.wkv_b.weight.view(self.h, self.nope + self.dv, self.c)
        q_lat = torch.einsum("bthd,hdc->bthc", q_nope, w[:, : self.nope])
        scores = torch.einsum("bthc,bsc->bths", q_lat, latent) + torch.einsum("bthr,bsr->bths", q_pe, k_pe)
        scores = scores * self.scale
        allowed = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(past)
        scores = scores.masked_fill(~allowed[:, None, :], float("-inf"))
        p = F.softmax(scores, dim=-1)
        o = torch.einsum("bths,bsc->bthc", p, latent)
        o = torch.einsum("bthc,hdc->bthd", o, w[:, self.nope:])
        return self.wo(o.reshape(B, T, -1)), (latent, k_pe)
# bug-line: 44
