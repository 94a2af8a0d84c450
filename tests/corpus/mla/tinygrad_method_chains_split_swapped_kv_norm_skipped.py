# attnprep: mla
# expect: wrong_output
# diagnosis: mla_split_order + mla_norm_skipped
"""tinygrad habits ported to torch: every step a Tensor-method chain (.reshape().transpose(),
.matmul(), .mul(), .softmax()), masks as .where on the scores, shapes in trailing comments."""
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


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h, self.kv_lora_rank = num_heads, kv_lora_rank
        self.nope, self.rope, self.dv, self.theta = qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank, eps=1e-6)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank, eps=1e-6)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        H, nope, rope, dv = self.h, self.nope, self.rope, self.dv
        freqs_cis = precompute_freqs_cis(rope, T, self.theta, device=x.device)
        q_nope, q_pe = self.wq_b(self.q_norm(self.wq_a(x))).reshape(B, T, H, nope + rope).split([nope, rope], dim=-1)
        q = torch.cat([q_nope, apply_rotary_emb(q_pe, freqs_cis)], dim=-1).transpose(1, 2)  # (B, H, T, nope+rope)
        kv_a = self.wkv_a(x)  # (B, T, kv_lora_rank + rope)
        k_pe, c_kv = kv_a.split([rope, self.kv_lora_rank], dim=-1)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis).expand(B, T, H, rope)  # (B, T, H, rope)
        kv = self.wkv_b(c_kv).reshape(B, T, H, nope + dv)
        k_nope, v = kv.split([nope, dv], dim=-1)
        k = torch.cat([k_nope, k_pe], dim=-1).transpose(1, 2)  # (B, H, T, nope+rope)
        scores = q.matmul(k.transpose(-2, -1)).mul(1 / math.sqrt(nope + rope))  # (B, H, T, T)
        if attention_mask is not None:
            scores = scores.where(attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            scores = scores.where(torch.ones(T, T, dtype=torch.bool, device=x.device).tril(), float("-inf"))
        out = scores.softmax(-1).matmul(v.transpose(1, 2)).transpose(1, 2).reshape(B, T, H * dv)
        return self.wo(out)
# bug-line: 77, 79
