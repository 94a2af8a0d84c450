# attnprep: mla_decode
# expect: mask_leak
# diagnosis: cache_chunk_unmasked
"""力扣风格的面试模板：中文 docstring，吸收式 MLA 解码。掩码只在 prefill（cache 为 None）时构造：
单个 token 的解码步不需要掩码，所以看起来是对的；但缓存之后一次送入多个新 token（chunk）时，
新 token 能看到它之后的新 token。"""

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


class MLADecode(nn.Module):
    """题目：实现带压缩 KV 缓存的 MLA 解码（吸收 W_UK / W_UV）。

    输入：x (B, T, d_model)；cache 为 None 或 (c_kv, k_pe)。
    输出：(out, (c_kv, k_pe))。
    """

    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.c, self.nope, self.rope, self.dv = num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim
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
        H, c, nope, rope, dv = self.H, self.c, self.nope, self.rope, self.dv
        T_past = 0 if cache is None else cache[0].shape[1]
        fc = precompute_freqs_cis(rope, T_past + T, self.theta, device=x.device)[T_past:]
        # 1. 查询：低秩压缩 + RMSNorm + 上投影
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, nope + rope)
        q_nope, q_pe = q.split([nope, rope], -1)
        q_pe = apply_rotary_emb(q_pe, fc)
        # 2. 潜变量与共享的 k_pe
        c_kv, k_pe = self.wkv_a(x).split([c, rope], -1)
        c_kv = self.kv_norm(c_kv)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), fc).squeeze(2)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], 1)
            k_pe = torch.cat([cache[1], k_pe], 1)
        # 3. 吸收：q_nope · W_UK
        w = self.wkv_b.weight.view(H, nope + dv, c)
        q_abs = torch.einsum("bthn,hnc->bthc", q_nope, w[:, :nope])
        s = torch.einsum("bthc,bsc->bhts", q_abs, c_kv) + torch.einsum("bthr,bsr->bhts", q_pe, k_pe)
        s = s / math.sqrt(nope + rope)
        # 4. 因果掩码（只在 prefill 时）
        if cache is None:
            s = s.masked_fill(torch.ones(T, T_past + T, dtype=torch.bool, device=x.device).tril(T_past).logical_not(), float("-inf"))
        p = F.softmax(s, dim=-1)
        o = torch.einsum("bhts,bsc->bthc", p, c_kv)
        o = torch.einsum("bthc,hvc->bthv", o, w[:, nope:])
        return self.wo(o.reshape(B, T, H * dv)), (c_kv, k_pe)
# bug-line: 102
