# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_scale_kv_rank + mla_rope_position_zero
# Two mistakes of the absorbed decode: the softmax scale 1/sqrt(kv_lora_rank) (the latent width) and RoPE
# computed for the new tokens only (positions restart at 0 on every call).
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# region rope-helpers
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
# endregion rope-helpers


def rms_norm(x: torch.Tensor, gain: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """x / sqrt(mean(x²) + eps) · gain, in float32, cast back."""
    h = x.float()
    return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * gain


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h, self.c = num_heads, kv_lora_rank
        self.nope, self.rope, self.dv = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.softmax_scale = kv_lora_rank ** -0.5
        self.W_dq = nn.Parameter(torch.randn(q_lora_rank, d_model) * 0.02)
        self.g_q = nn.Parameter(torch.ones(q_lora_rank))
        self.W_uq = nn.Parameter(torch.randn(num_heads * (qk_nope_head_dim + qk_rope_head_dim), q_lora_rank) * 0.02)
        self.W_dkv = nn.Parameter(torch.randn(kv_lora_rank + qk_rope_head_dim, d_model) * 0.02)
        self.g_kv = nn.Parameter(torch.ones(kv_lora_rank))
        self.W_ukv = nn.Parameter(torch.randn(num_heads * (qk_nope_head_dim + v_head_dim), kv_lora_rank) * 0.02)
        self.W_o = nn.Parameter(torch.randn(d_model, num_heads * v_head_dim) * 0.02)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, c, nope, rope, dv = self.h, self.c, self.nope, self.rope, self.dv
        past = 0 if cache is None else cache[0].shape[1]
        S = past + T
        freqs = precompute_freqs_cis(rope, T, self.theta, device=x.device)
        q = F.linear(rms_norm(F.linear(x, self.W_dq), self.g_q), self.W_uq).view(B, T, H, nope + rope)
        q_nope, q_pe = q.split([nope, rope], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs)
        c_kv, k_pe = F.linear(x, self.W_dkv).split([c, rope], dim=-1)
        c_kv = rms_norm(c_kv, self.g_kv)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs).squeeze(2)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        kv_cache, pe_cache = c_kv, k_pe
        wkv_b = self.W_ukv.view(self.h, -1, self.c)
        q_lat = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :self.nope])
        scores = (torch.einsum("bshc,btc->bsht", q_lat, kv_cache) +
                  torch.einsum("bshr,btr->bsht", q_pe, pe_cache)) * self.softmax_scale
        if T > 1:
            mask = torch.full((T, S), float("-inf"), device=x.device).triu_(past + 1)
            scores += mask.unsqueeze(1)
        scores = scores.softmax(dim=-1, dtype=torch.float32).type_as(x)
        x = torch.einsum("bsht,btc->bshc", scores, kv_cache)
        x = torch.einsum("bshc,hdc->bshd", x, wkv_b[:, -self.dv:])
        return F.linear(x.flatten(2), self.W_o), (kv_cache, pe_cache)
