# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_norm_skipped
"""The latent cache as a typing.NamedTuple (LatentCache with c_kv / k_pe and an `extend` method
that returns a new tuple), `_replace` for the rotated part, the absorbed weights taken by
unflatten of wkv_b's weight, scores as one einsum over the latent plus one over the rope part."""
import math
from typing import NamedTuple

import torch
import torch.nn as nn


class LatentCache(NamedTuple):
    c_kv: torch.Tensor  # (B, S, c)
    k_pe: torch.Tensor  # (B, S, rope)

    def extend(self, other: "LatentCache") -> "LatentCache":
        return LatentCache(torch.cat([self.c_kv, other.c_kv], 1), torch.cat([self.k_pe, other.k_pe], 1))

    @property
    def length(self) -> int:
        return self.c_kv.shape[1]


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    t = torch.arange(seq_len, dtype=torch.float64, device=device)
    angles = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x, freqs_cis):
    pairs = x.to(torch.float64).unflatten(-1, (-1, 2)).contiguous()
    y = torch.view_as_complex(pairs) * freqs_cis[:, None, :]
    return torch.view_as_real(y).flatten(-2).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.to(torch.promote_types(x.dtype, torch.float32))
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.c = num_heads, kv_lora_rank
        self.nope, self.rope, self.v = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, c, nope, rope = self.H, self.c, self.nope, self.rope
        past = LatentCache(*cache) if cache is not None else None
        start = past.length if past is not None else 0
        freqs = precompute_freqs_cis(rope, start + T, self.theta, device=x.device)[start:]

        q = self.wq_b(self.q_norm(self.wq_a(x))).unflatten(-1, (H, nope + rope))
        q_nope, q_pe = q.split([nope, rope], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs)
        c_new, kpe_new = self.wkv_a(x).split([c, rope], dim=-1)
        new = LatentCache(c_new, kpe_new)
        new = new._replace(k_pe=apply_rotary_emb(new.k_pe[:, :, None], freqs)[:, :, 0])
        full = past.extend(new) if past is not None else new
        S = full.length

        w = self.wkv_b.weight.unflatten(0, (H, nope + self.v))  # (H, nope + v, c)
        q_lat = torch.einsum("bthd,hdc->bthc", q_nope, w[:, :nope])
        scores = (torch.einsum("bthc,bsc->bhts", q_lat, full.c_kv)
                  + torch.einsum("bthr,bsr->bhts", q_pe, full.k_pe)) / math.sqrt(nope + rope)
        allowed = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(S - T)
        probs = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
        o_lat = torch.einsum("bhts,bsc->bthc", probs, full.c_kv)
        out = torch.einsum("bthc,hdc->bthd", o_lat, w[:, nope:])
        return self.wo(out.flatten(2)), tuple(full)
# bug-line: 77
