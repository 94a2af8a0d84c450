# attnprep: mla_decode
# expect: passed
"""DeepSeek-V3 absorb path, the causal mask from absolute positions through torch.where with finfo.min
(中文注释), otherwise as the inference code."""

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


class MLADecode(nn.Module):
    def __init__(
        self,
        d_model: int,
        num_heads: int,
        q_lora_rank: int,
        kv_lora_rank: int,
        qk_nope_head_dim: int,
        qk_rope_head_dim: int,
        v_head_dim: int,
        rope_theta: float = 10000.0,
    ):
        super().__init__()
        assert qk_rope_head_dim % 2 == 0, "RoPE rotates pairs: qk_rope_head_dim must be even"
        self.num_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.qk_nope_head_dim = qk_nope_head_dim
        self.qk_rope_head_dim = qk_rope_head_dim
        self.v_head_dim = v_head_dim
        self.rope_theta = rope_theta
        self.softmax_scale = 1.0 / math.sqrt(qk_nope_head_dim + qk_rope_head_dim)  # the per-head [nope; rope] width

        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank, eps=1e-6)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)  # -> [c_kv; k_pe]
        self.kv_norm = RMSNorm(kv_lora_rank, eps=1e-6)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(
        self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        B, T, _ = x.shape  # T new tokens
        H, nope, rope, dv = self.num_heads, self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim
        c = self.kv_lora_rank
        T_past = 0 if cache is None else cache[0].size(1)
        S = T_past + T  # keys: the cached tokens and the new ones
        # rotations of the absolute positions T_past .. S-1 of the new tokens
        freqs_cis = precompute_freqs_cis(rope, S, self.rope_theta, device=x.device)[T_past:]  # (T, rope/2)

        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, nope + rope)  # (B, T, H, nope+rope)
        q_nope, q_pe = torch.split(q, [nope, rope], dim=-1)  # (B, T, H, nope), (B, T, H, rope)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)  # (B, T, H, rope)

        # the new tokens' cache entries: the latent after kv_norm, and the rotated shared RoPE key
        kv, k_pe = torch.split(self.wkv_a(x), [c, rope], dim=-1)  # (B, T, c), (B, T, rope)
        kv = self.kv_norm(kv)  # (B, T, c)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis).squeeze(2)  # (B, T, rope)
        if cache is not None:
            kv = torch.cat([cache[0], kv], dim=1)  # (B, S, c): the old tokens first
            k_pe = torch.cat([cache[1], k_pe], dim=1)  # (B, S, rope)

        # wkv_b.weight rows, head by head: [nope key rows (W_UK); dv value rows (W_UV)]
        wkv_b = self.wkv_b.weight.view(H, nope + dv, c)  # (H, nope+dv, c)
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :nope])  # (B, T, H, c): W_UK absorbed
        scores = (
            torch.einsum("bshc,btc->bsht", q_nope, kv)  # (B, T, H, S): q_nope·W_UK against every latent
            + torch.einsum("bshr,btr->bsht", q_pe, k_pe)  # (B, T, H, S): the RoPE part
        ) * self.softmax_scale
        # new token t is at position T_past + t and sees keys j <= T_past + t
        q_pos = torch.arange(T_past, S, device=x.device)  # 新 token 的绝对位置
        k_pos = torch.arange(S, device=x.device)
        scores = torch.where((k_pos[None, :] <= q_pos[:, None])[:, None, :], scores, torch.finfo(scores.dtype).min)
        attn = scores.softmax(dim=-1)  # (B, T, H, S)

        out = torch.einsum("bsht,btc->bshc", attn, kv)  # (B, T, H, c): weighted sum of the latents
        out = torch.einsum("bshc,hdc->bshd", out, wkv_b[:, -dv:])  # (B, T, H, dv): W_UV after the sum
        return self.wo(out.flatten(2)), (kv, k_pe)  # (B, T, d_model), ((B, S, c), (B, S, rope))
