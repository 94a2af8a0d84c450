# attnprep: mla
# expect: wrong_output
# diagnosis: mla_norm_skipped
"""Every tensor annotated in jaxtyping style comments (Float[Tensor, "b t h d"]) and the heads kept
as (b, h, t, d); the latent c_kv goes straight into wkv_b without kv_norm (the module is built and
never called)."""

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


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h, self.c = num_heads, kv_lora_rank
        self.dn, self.dr, self.dv = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        # x: Float[Tensor, "b t d_model"]; attention_mask: Bool[Tensor, "b t"] | None
        b, t, _ = x.shape
        h, dn, dr, dv = self.h, self.dn, self.dr, self.dv
        freqs = precompute_freqs_cis(dr, t, self.theta, device=x.device)  # Complex[Tensor, "t dr/2"]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(b, t, h, dn + dr)  # Float[Tensor, "b t h dn+dr"]
        q_nope, q_pe = q[..., :dn], apply_rotary_emb(q[..., dn:], freqs)  # "b t h dn", "b t h dr"
        c_kv, k_pe = self.wkv_a(x).split([self.c, dr], dim=-1)  # "b t c", "b t dr"
        k_pe = apply_rotary_emb(k_pe[:, :, None, :], freqs)  # "b t 1 dr"
        kv = self.wkv_b(c_kv).view(b, t, h, dn + dv)
        k_nope, v = kv[..., :dn], kv[..., dn:]  # "b t h dn", "b t h dv"
        q_bh = torch.cat([q_nope, q_pe], -1).permute(0, 2, 1, 3)  # "b h t dn+dr"
        k_bh = torch.cat([k_nope, k_pe.expand(b, t, h, dr)], -1).permute(0, 2, 1, 3)  # "b h t dn+dr"
        v_bh = v.permute(0, 2, 1, 3)  # "b h t dv"
        att = q_bh @ k_bh.transpose(-1, -2) / math.sqrt(dn + dr)  # "b h t t"
        if attention_mask is not None:
            att = att.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            att = att.masked_fill(torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        y = F.softmax(att, dim=-1) @ v_bh  # "b h t dv"
        return self.wo(y.permute(0, 2, 1, 3).reshape(b, t, h * dv))  # "b t d_model"
# bug-line: 84
