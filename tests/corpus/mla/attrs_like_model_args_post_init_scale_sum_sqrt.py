# attnprep: mla
# expect: wrong_output
# diagnosis: mla_scale_sum_sqrt
"""An attrs-style frozen ModelArgs (slots, keyword-only) whose derived sizes are set in
__post_init__ through object.__setattr__ (qk_head_dim, softmax_scale), the module reading every
size from it; the ready-made RoPE helpers and RMSNorm of the stub."""
import math
from dataclasses import dataclass, field

import torch
import torch.nn as nn


@dataclass(frozen=True, kw_only=True)
class ModelArgs:
    dim: int
    n_heads: int
    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    rope_theta: float = 10000.0
    qk_head_dim: int = field(init=False)
    softmax_scale: float = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "qk_head_dim", self.qk_nope_head_dim + self.qk_rope_head_dim)
        object.__setattr__(self, "softmax_scale", 1.0 / (math.sqrt(self.qk_nope_head_dim) + math.sqrt(self.qk_rope_head_dim)))


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    t = torch.arange(seq_len, dtype=torch.float64, device=device)
    angles = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x, freqs_cis):
    pairs = x.to(torch.float64).unflatten(-1, (-1, 2)).contiguous()
    y = torch.view_as_complex(pairs) * freqs_cis[:, None, :]
    return torch.view_as_real(y).flatten(-2).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.to(torch.promote_types(x.dtype, torch.float32))
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        a = self.args = ModelArgs(dim=d_model, n_heads=num_heads, q_lora_rank=q_lora_rank,
                                  kv_lora_rank=kv_lora_rank, qk_nope_head_dim=qk_nope_head_dim,
                                  qk_rope_head_dim=qk_rope_head_dim, v_head_dim=v_head_dim,
                                  rope_theta=rope_theta)
        self.wq_a = nn.Linear(a.dim, a.q_lora_rank, bias=False)
        self.q_norm = RMSNorm(a.q_lora_rank)
        self.wq_b = nn.Linear(a.q_lora_rank, a.n_heads * a.qk_head_dim, bias=False)
        self.wkv_a = nn.Linear(a.dim, a.kv_lora_rank + a.qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(a.kv_lora_rank)
        self.wkv_b = nn.Linear(a.kv_lora_rank, a.n_heads * (a.qk_nope_head_dim + a.v_head_dim), bias=False)
        self.wo = nn.Linear(a.n_heads * a.v_head_dim, a.dim, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        a = self.args
        bsz, seqlen, _ = x.shape
        freqs_cis = precompute_freqs_cis(a.qk_rope_head_dim, seqlen, a.rope_theta, device=x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(bsz, seqlen, a.n_heads, a.qk_head_dim)
        q_nope, q_pe = torch.split(q, [a.qk_nope_head_dim, a.qk_rope_head_dim], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)
        kv, k_pe = torch.split(self.wkv_a(x), [a.kv_lora_rank, a.qk_rope_head_dim], dim=-1)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis)
        kv = self.wkv_b(self.kv_norm(kv)).view(bsz, seqlen, a.n_heads, a.qk_nope_head_dim + a.v_head_dim)
        k_nope, v = torch.split(kv, [a.qk_nope_head_dim, a.v_head_dim], dim=-1)
        q = torch.cat([q_nope, q_pe], dim=-1)
        k = torch.cat([k_nope, k_pe.expand(-1, -1, a.n_heads, -1)], dim=-1)
        scores = torch.einsum("bshd,bthd->bsht", q, k) * a.softmax_scale
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            scores = scores.masked_fill(torch.ones(seqlen, seqlen, dtype=torch.bool, device=x.device).triu(1)[:, None, :], float("-inf"))
        scores = scores.softmax(dim=-1, dtype=torch.float32).type_as(x)
        out = torch.einsum("bsht,bthd->bshd", scores, v)
        return self.wo(out.flatten(2))
# bug-line: 29
