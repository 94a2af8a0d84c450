# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_rope_position_zero
"""A Mojo programmer's habits: `fn`-style functions with every argument typed, `var` / `let`
locals marked in comments, a @value-like dataclass for the static sizes, `inout`-named results
and SIMD-width comments; each call's rotations were computed for positions 0 .. T-1 of its own
tokens, not for their absolute positions after the cache."""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    t = torch.arange(seq_len, dtype=torch.float64, device=device)
    angles = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x, freqs_cis):
    pairs = x.to(torch.float64).unflatten(-1, (-1, 2))
    pairs = pairs.clone(memory_format=torch.contiguous_format)
    x_c = torch.view_as_complex(pairs)
    y = x_c * freqs_cis[:, None, :]
    return torch.view_as_real(y).flatten(-2).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


@dataclass(frozen=True)
class Sizes:  # @value struct Sizes
    heads: int
    nope: int
    rope: int
    v: int
    rank: int
    theta: float


fn = staticmethod


class MLADecode(nn.Module):
    def __init__(self, d_model: int, num_heads: int, q_lora_rank: int, kv_lora_rank: int, qk_nope_head_dim: int, qk_rope_head_dim: int, v_head_dim: int, rope_theta: float = 10000.0):
        super().__init__()
        self.z = Sizes(num_heads, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, kv_lora_rank, rope_theta)
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank, eps=1e-6)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank, eps=1e-6)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    @fn
    def rotations(z: Sizes, past: int, new: int, device: torch.device) -> torch.Tensor:
        let_all = precompute_freqs_cis(z.rope, new, z.theta, device=device)
        return let_all

    def forward(self, x: torch.Tensor, cache=None):
        z = self.z
        B, T, _ = x.shape
        past = 0 if cache is None else cache[0].shape[1]  # let past: Int
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, z.heads, z.nope + z.rope)
        q_nope, q_pe = q.split([z.nope, z.rope], dim=-1)
        c_new, pe_new = self.wkv_a(x).split([z.rank, z.rope], dim=-1)
        freqs = MLADecode.rotations(z, past, T, x.device)
        q_pe = apply_rotary_emb(q_pe, freqs)
        pe_new = apply_rotary_emb(pe_new[:, :, None, :], freqs)[:, :, 0, :]
        c_new = self.kv_norm(c_new)
        # var inout_c, inout_pe
        inout_c = c_new if cache is None else torch.cat([cache[0], c_new], dim=1)
        inout_pe = pe_new if cache is None else torch.cat([cache[1], pe_new], dim=1)
        w = self.wkv_b.weight.view(z.heads, z.nope + z.v, z.rank)
        w_uk, w_uv = w[:, : z.nope], w[:, z.nope :]
        q_lat = torch.einsum("bthn,hnc->bthc", q_nope, w_uk)
        scores = torch.einsum("bthc,bsc->bhts", q_lat, inout_c) + torch.einsum("bthr,bsr->bhts", q_pe, inout_pe)
        scores = scores / math.sqrt(z.nope + z.rope)
        S = inout_c.shape[1]
        rows = torch.arange(T, device=x.device)[:, None] + past
        cols = torch.arange(S, device=x.device)[None, :]
        scores = scores.masked_fill(cols > rows, float("-inf"))
        probs = scores.softmax(dim=-1)
        o_lat = torch.einsum("bhts,bsc->bthc", probs, inout_c)
        out = torch.einsum("bthc,hvc->bthv", o_lat, w_uv).reshape(B, T, z.heads * z.v)
        return self.wo(out), (inout_c, inout_pe)
# bug-line: 68
