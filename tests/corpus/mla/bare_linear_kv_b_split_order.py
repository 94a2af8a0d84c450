# attnprep: mla
# expect: wrong_output
# diagnosis: mla_split_order
"""Bare weight matrices and F.linear throughout (gains as 1-D parameters), einsum attention; the
output of wkv_b is split as [v; k_nope] per head instead of [k_nope; v]."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

def precompute_freqs_cis(dim: int, seqlen: int, theta: float) -> torch.Tensor:
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    t = torch.arange(seqlen)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_emb(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    dtype = x.dtype
    x = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.view(1, x.size(1), 1, x.size(-1))
    y = torch.view_as_real(x * freqs_cis).flatten(3)
    return y.to(dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return (h * self.weight).type_as(x)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h, self.c = num_heads, kv_lora_rank
        self.nope, self.rope, self.dv = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        p = lambda *s: nn.Parameter(torch.randn(*s) * 0.02)  # noqa: E731
        self.wq_a = p(q_lora_rank, d_model)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = p(num_heads * (qk_nope_head_dim + qk_rope_head_dim), q_lora_rank)
        self.wkv_a = p(kv_lora_rank + qk_rope_head_dim, d_model)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = p(num_heads * (qk_nope_head_dim + v_head_dim), kv_lora_rank)
        self.wo = p(d_model, num_heads * v_head_dim)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        freqs = precompute_freqs_cis(self.rope, T, self.theta).to(x.device)
        q = F.linear(self.q_norm(F.linear(x, self.wq_a)), self.wq_b).view(B, T, self.h, self.nope + self.rope)
        q_nope, q_pe = q.split([self.nope, self.rope], -1)
        q_pe = apply_rotary_emb(q_pe, freqs)
        c_kv, k_pe = F.linear(x, self.wkv_a).split([self.c, self.rope], -1)
        k_pe = apply_rotary_emb(k_pe[:, :, None], freqs)  # (B, T, 1, rope)
        kv = F.linear(self.kv_norm(c_kv), self.wkv_b).view(B, T, self.h, self.nope + self.dv)
        v, k_nope = kv.split([self.dv, self.nope], -1)
        s = torch.einsum("bqhd,bkhd->bhqk", q_nope, k_nope) + torch.einsum("bqhr,bkxr->bhqk", q_pe, k_pe)
        s = s / math.sqrt(self.nope + self.rope)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        o = torch.einsum("bhqk,bkhd->bqhd", s.softmax(-1), v)
        return F.linear(o.reshape(B, T, self.h * self.dv), self.wo)
# bug-line: 65
