# attnprep: mla_decode
# expect: mask_leak
# diagnosis: mla_scale_partial + causal_leaks_next
"""ml-ane-transformers habits: the scores built per head in a Python loop over heads (the ANE
reference splits heads into a list), the absorbed query computed head by head; two slips: the scale
is 1/sqrt(qk_nope_head_dim) only, and the causal keep-mask's diagonal is past + 1 (one future key)."""

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
        self.n_heads, self.c = num_heads, kv_lora_rank
        self.nope, self.rope, self.dv = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
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
        nope, rope, dv, c = self.nope, self.rope, self.dv, self.c
        past = 0 if cache is None else cache[0].shape[1]
        S = past + T
        fc = precompute_freqs_cis(rope, S, self.theta, device=x.device)[past:]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.n_heads, nope + rope)
        q_pe_all = apply_rotary_emb(q[..., nope:], fc)
        c_kv, k_pe = self.wkv_a(x).split([c, rope], -1)
        c_kv = self.kv_norm(c_kv)
        k_pe = apply_rotary_emb(k_pe[:, :, None], fc)[:, :, 0]
        if cache is not None:
            c_kv, k_pe = torch.cat([cache[0], c_kv], 1), torch.cat([cache[1], k_pe], 1)
        w = self.wkv_b.weight.view(self.n_heads, nope + dv, c)
        keep = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(past + 1)
        heads = []
        for h in range(self.n_heads):
            q_lat = q[:, :, h, :nope] @ w[h, :nope]  # (B, T, c)
            s = q_lat @ c_kv.transpose(1, 2) + q_pe_all[:, :, h] @ k_pe.transpose(1, 2)  # (B, T, S)
            s = s * nope ** -0.5
            s = s.masked_fill(~keep, float("-inf"))
            o_lat = F.softmax(s, dim=-1) @ c_kv  # (B, T, c)
            heads.append(o_lat @ w[h, nope:].T)  # (B, T, dv)
        return self.wo(torch.cat(heads, dim=-1)), (c_kv, k_pe)
# bug-line: 87, 92
