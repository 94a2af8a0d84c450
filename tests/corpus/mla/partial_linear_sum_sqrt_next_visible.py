# attnprep: mla
# expect: mask_leak
# diagnosis: mla_scale_sum_sqrt + causal_leaks_next
"""Every projection built by a functools.partial(nn.Linear, bias=False) factory, the causal mask as
triu(diagonal=2) (one future key let through), and the scale written as 1/(sqrt(nope) + sqrt(rope))
as if the two parts of the head scaled separately."""

import functools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# --- ready-made: RoPE helpers (DeepSeek's interleaved-pair form) ------------------------------

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
    """x / sqrt(mean(x^2) + eps) * weight over the last dim (no mean subtraction, no bias),
    computed in at least float32 and cast back."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.to(torch.promote_types(x.dtype, torch.float32))
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)

Dense = functools.partial(nn.Linear, bias=False)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.c, self.nope, self.rope, self.dv = num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.wq_a = Dense(d_model, q_lora_rank)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = Dense(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim))
        self.wkv_a = Dense(d_model, kv_lora_rank + qk_rope_head_dim)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = Dense(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim))
        self.wo = Dense(num_heads * v_head_dim, d_model)
        self.scale = 1.0 / (math.sqrt(qk_nope_head_dim) + math.sqrt(qk_rope_head_dim))

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        H, nope, rope, dv = self.H, self.nope, self.rope, self.dv
        fc = precompute_freqs_cis(rope, T, self.theta, device=x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).unflatten(-1, (H, nope + rope))
        q = torch.cat([q[..., :nope], apply_rotary_emb(q[..., nope:], fc)], dim=-1)
        c_kv, k_pe = self.wkv_a(x).split([self.c, rope], dim=-1)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), fc).expand(B, T, H, rope)
        k_nope, v = self.wkv_b(self.kv_norm(c_kv)).unflatten(-1, (H, nope + dv)).split([nope, dv], dim=-1)
        k = torch.cat([k_nope, k_pe], dim=-1)
        s = torch.einsum("bqhd,bkhd->bhqk", q, k) * self.scale
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask.view(B, 1, 1, T), float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(diagonal=2), float("-inf"))
        o = torch.einsum("bhqk,bkhd->bqhd", F.softmax(s, dim=-1), v)
        return self.wo(o.reshape(B, T, H * dv))
# bug-line: 76, 92
