# attnprep: mla
# expect: wrong_output
# diagnosis: mla_scale_sum_sqrt
"""Sizes in a collections.ChainMap (the constructor's arguments over module-level defaults), read by
key everywhere; the stub's RoPE helpers and RMSNorm as given."""
import math
from collections import ChainMap

import torch
import torch.nn as nn
import torch.nn.functional as F

DEFAULTS = {"rope_theta": 10000.0, "norm_eps": 1e-6, "fill": float("-inf")}


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


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.cfg = ChainMap(
            {"d_model": d_model, "heads": num_heads, "q_rank": q_lora_rank, "kv_rank": kv_lora_rank,
             "nope": qk_nope_head_dim, "rope": qk_rope_head_dim, "dv": v_head_dim, "rope_theta": rope_theta},
            DEFAULTS,
        )
        c = self.cfg
        self.wq_a = nn.Linear(c["d_model"], c["q_rank"], bias=False)
        self.q_norm = RMSNorm(c["q_rank"], eps=c["norm_eps"])
        self.wq_b = nn.Linear(c["q_rank"], c["heads"] * (c["nope"] + c["rope"]), bias=False)
        self.wkv_a = nn.Linear(c["d_model"], c["kv_rank"] + c["rope"], bias=False)
        self.kv_norm = RMSNorm(c["kv_rank"], eps=c["norm_eps"])
        self.wkv_b = nn.Linear(c["kv_rank"], c["heads"] * (c["nope"] + c["dv"]), bias=False)
        self.wo = nn.Linear(c["heads"] * c["dv"], c["d_model"], bias=False)
        self.softmax_scale = 1.0 / (math.sqrt(c["nope"]) + math.sqrt(c["rope"]))

    def forward(self, x, attention_mask=None, is_causal=False):
        c = self.cfg
        B, T, _ = x.shape
        H, nope, rope, dv = c["heads"], c["nope"], c["rope"], c["dv"]
        freqs_cis = precompute_freqs_cis(rope, T, c["rope_theta"], device=x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, nope + rope)
        q_nope, q_pe = q.split([nope, rope], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)
        c_kv, k_pe = self.wkv_a(x).split([c["kv_rank"], rope], dim=-1)
        k_pe = apply_rotary_emb(k_pe[:, :, None], freqs_cis)  # (B, T, 1, rope)
        k_nope, v = self.wkv_b(self.kv_norm(c_kv)).view(B, T, H, nope + dv).split([nope, dv], dim=-1)
        q = torch.cat([q_nope, q_pe], dim=-1)  # (B, T, H, nope+rope)
        k = torch.cat([k_nope, k_pe.expand(-1, -1, H, -1)], dim=-1)
        scores = torch.einsum("bshd,bthd->bhst", q, k) * self.softmax_scale
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], c["fill"])
        if is_causal:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), c["fill"])
        probs = F.softmax(scores, dim=-1)
        out = torch.einsum("bhst,bthd->bshd", probs, v).reshape(B, T, H * dv)
        return self.wo(out)
# bug-line: 77
