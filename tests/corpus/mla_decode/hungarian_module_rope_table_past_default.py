# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_rope_position_zero
"""A module-level rope_table(dim, n_new, theta, past=0) over the stub's precompute_freqs_cis, Hungarian
comments; the absorbed scores with W_UK / W_UV sliced from wkv_b's per-head rows."""
import math

import torch
import torch.nn as nn


def precompute_freqs_cis(
    dim: int, seq_len: int, theta: float = 10000.0, device: torch.device | str | None = None
) -> torch.Tensor:
    """RoPE rotations of DeepSeek's inference/model.py: a complex tensor (seq_len, dim // 2).

    Entry [t, i] is e^(j·t·theta^(-2i/dim)): the rotation of the pair (x[2i], x[2i+1]) at position t,
    for positions t = 0 .. seq_len-1. Computed in float64 (complex128), so the angles stay exact for
    long sequences; apply_rotary_emb casts its result back to the input's dtype.
    """
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)  # (dim/2,)
    t = torch.arange(seq_len, dtype=torch.float64, device=device)  # (seq_len,)
    angles = torch.outer(t, freqs)  # (seq_len, dim/2)
    return torch.polar(torch.ones_like(angles), angles)  # (seq_len, dim/2), cos + j·sin


def apply_rotary_emb(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    """Rotate x (B, T, H, dim) by position with DeepSeek's interleaved-pair RoPE.

    Adjacent pairs (x[2i], x[2i+1]) are read as the complex number x[2i] + j·x[2i+1] and multiplied
    by freqs_cis[t, i] (from precompute_freqs_cis(dim, T)), i.e. [x1·cos − x2·sin, x1·sin + x2·cos]
    written back in place. freqs_cis broadcasts over batch and heads; returns x's shape and dtype.
    """
    pairs = x.to(torch.float64).unflatten(-1, (-1, 2))  # (B, T, H, dim/2, 2)
    pairs = pairs.clone(memory_format=torch.contiguous_format)  # view_as_complex needs even offsets
    x_c = torch.view_as_complex(pairs)  # (B, T, H, dim/2) complex
    y = x_c * freqs_cis[:, None, :]  # (B, T, H, dim/2) * (T, 1, dim/2)
    return torch.view_as_real(y).flatten(-2).to(x.dtype)  # (B, T, H, dim/2, 2) -> (B, T, H, dim)


class RMSNorm(nn.Module):
    """x / sqrt(mean(x²) + eps) · weight: no mean subtraction, no bias (Zhang & Sennrich 2019).
    Computed in at least float32 (fp16/bf16 are upcast, like DeepSeek) and cast back."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.to(torch.promote_types(x.dtype, torch.float32))
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


def rope_table(dim, n_new, theta, past=0, device=None):
    # a past .. past + n_new - 1 pozíciók forgatásai
    return precompute_freqs_cis(dim, past + n_new, theta, device=device)[past:]


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h, self.c = num_heads, kv_lora_rank
        self.nope, self.rope, self.dv, self.theta = qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank, eps=1e-6)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank, eps=1e-6)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, nope, rope, dv, c = self.h, self.nope, self.rope, self.dv, self.c
        mult = 0 if cache is None else cache[0].shape[1]
        freqs = rope_table(rope, T, self.theta, device=x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, nope + rope)
        q_nope, q_pe = q.split([nope, rope], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs)
        lat, k_pe = self.wkv_a(x).split([c, rope], dim=-1)
        lat = self.kv_norm(lat)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs).squeeze(2)
        if cache is not None:
            lat = torch.cat([cache[0], lat], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        S = lat.shape[1]
        w = self.wkv_b.weight.view(H, nope + dv, c)
        q_lat = torch.einsum("bthn,hnc->bthc", q_nope, w[:, :nope])
        s = torch.einsum("bthc,bsc->bths", q_lat, lat) + torch.einsum("bthr,bsr->bths", q_pe, k_pe)
        s = s / math.sqrt(nope + rope)
        lathato = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(mult)
        s = s.masked_fill(~lathato[:, None, :], float("-inf"))
        o = torch.einsum("bths,bsc->bthc", s.softmax(-1), lat)
        o = torch.einsum("bthc,hvc->bthv", o, w[:, nope:])
        return self.wo(o.flatten(2)), (lat, k_pe)
# bug-line: 79
