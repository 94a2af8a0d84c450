# attnprep: mla
# expect: passed
"""wkv_b held as a (H, nope + v, kv_lora_rank) parameter (per-head blocks, out x in) and read by
einsum; the others Linear; the stub's complex RoPE helpers."""
import math
import torch
import torch.nn as nn


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    t = torch.arange(seq_len, dtype=torch.float64, device=device)
    angles = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x, freqs_cis):
    x_c = torch.view_as_complex(x.to(torch.float64).unflatten(-1, (-1, 2)).contiguous())
    return torch.view_as_real(x_c * freqs_cis[:, None, :]).flatten(-2).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.c, self.nope, self.rope, self.dv, self.theta = (
            num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta)
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Parameter(torch.randn(num_heads, qk_nope_head_dim + v_head_dim, kv_lora_rank) * 0.05)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        H, nope, rope, dv = self.H, self.nope, self.rope, self.dv
        fc = precompute_freqs_cis(rope, T, self.theta, x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, nope + rope)
        q_nope, q_pe = q.split([nope, rope], -1)
        q_pe = apply_rotary_emb(q_pe, fc)
        c_kv, k_pe = self.wkv_a(x).split([self.c, rope], -1)
        k_pe = apply_rotary_emb(k_pe[:, :, None], fc)
        kv = torch.einsum("btc,hdc->bthd", self.kv_norm(c_kv), self.wkv_b)
        k_nope, v = kv.split([nope, dv], -1)
        s = (torch.einsum("bqhd,bkhd->bhqk", q_nope, k_nope) + torch.einsum("bqhr,bkxr->bhqk", q_pe, k_pe))
        s = s / math.sqrt(nope + rope)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        o = torch.einsum("bhqk,bkhd->bqhd", s.softmax(-1), v).reshape(B, T, H * dv)
        return self.wo(o)
