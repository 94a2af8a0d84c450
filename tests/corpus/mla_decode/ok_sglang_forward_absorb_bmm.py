# attnprep: mla_decode
# expect: passed
"""SGLang's DeepseekV2AttentionMLA.forward_absorb by hand: w_kc and w_vc split out of kv_b_proj's
weight once per call (w_kc (H, nope, c), w_vc (H, c, v) after a transpose), q_nope absorbed with
torch.bmm over the head axis (T*B moved behind the heads), the latent attention on [c_kv; k_pe]
concatenated as one key of width c + rope (q likewise), and the output mapped back through w_vc with
another bmm: correct."""

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


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_local_heads, self.kv_lora_rank = num_heads, kv_lora_rank
        self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.scaling = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5
        self.rope_theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, c = self.num_local_heads, self.kv_lora_rank
        nope, rope, dv = self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim
        past = 0 if cache is None else cache[0].shape[1]
        S = past + T
        freqs = precompute_freqs_cis(rope, S, self.rope_theta, device=x.device)[past:]
        w = self.wkv_b.weight.unflatten(0, (H, nope + dv))  # (H, nope + dv, c)
        w_kc, w_vc = w[:, :nope], w[:, nope:].transpose(1, 2)  # (H, nope, c), (H, c, dv)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, nope + rope)
        q_nope, q_pe = q.split([nope, rope], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs)
        q_nope_out = torch.bmm(q_nope.reshape(B * T, H, nope).transpose(0, 1), w_kc)  # (H, B*T, c)
        q_nope_out = q_nope_out.transpose(0, 1).reshape(B, T, H, c)
        latent, k_pe = self.wkv_a(x).split([c, rope], dim=-1)
        latent = self.kv_norm(latent)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs).squeeze(2)
        if cache is not None:
            latent = torch.cat([cache[0], latent], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        q_input = torch.cat([q_nope_out, q_pe], dim=-1)  # (B, T, H, c + rope)
        k_input = torch.cat([latent, k_pe], dim=-1)  # (B, S, c + rope): one MQA key for all heads
        scores = torch.einsum("bthe,bse->bhts", q_input, k_input) * self.scaling
        keep = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(diagonal=past)
        scores = scores.masked_fill(~keep, float("-inf"))
        attn_output = torch.einsum("bhts,bsc->bthc", F.softmax(scores, dim=-1), latent)  # (B, T, H, c)
        attn_bmm = torch.bmm(attn_output.reshape(B * T, H, c).transpose(0, 1), w_vc)  # (H, B*T, dv)
        attn_bmm = attn_bmm.transpose(0, 1).reshape(B, T, H * dv)
        return self.wo(attn_bmm), (latent, k_pe)
