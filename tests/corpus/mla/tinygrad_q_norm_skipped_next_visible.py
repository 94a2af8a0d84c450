# attnprep: mla
# expect: mask_leak
# diagnosis: mla_norm_skipped + causal_leaks_next
"""tinygrad's llama.py habits in torch: layers chained with a `sequential` helper (Tensor.sequential),
RoPE through tinygrad's complex_mult on (..., r/2, 2) pairs with cos / sin tables, the causal mask as
`ones(t, t).triu(k)` used in a where, `.matmul` and `.softmax(-1)` as methods. Two slips: the query
chain leaves q_norm out, and the future mask starts at triu(2), so the next token is visible."""

import math

import torch
import torch.nn as nn


def sequential(x, layers):
    for layer in layers:
        x = layer(x)
    return x


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * (x.square().mean(-1, keepdim=True) + self.eps).rsqrt()

    def forward(self, x):
        return self._norm(x.float()).to(x.dtype) * self.weight


def precompute_freqs(dim, end, theta, device):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, device=device)[: dim // 2].float() / dim))
    ang = torch.arange(end, device=device).float()[:, None] * freqs[None, :]  # (end, dim/2)
    return ang.cos()[:, None, :], ang.sin()[:, None, :]  # (end, 1, dim/2)


def complex_mult(a_re, a_im, b_re, b_im):
    return a_re * b_re - a_im * b_im, a_re * b_im + a_im * b_re


def apply_rotary_emb(x, freqs_cos, freqs_sin):
    xr = x.float().reshape(*x.shape[:-1], -1, 2)  # (B, T, H, r/2, 2)
    re, im = complex_mult(xr[..., 0], xr[..., 1], freqs_cos, freqs_sin)
    return torch.stack([re, im], dim=-1).flatten(-2).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.n_heads, self.kv_lora_rank = num_heads, kv_lora_rank
        self.nope, self.rope, self.dv = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.rope_theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, seqlen, _ = x.shape
        H, nope, rope, dv = self.n_heads, self.nope, self.rope, self.dv
        fc, fs = precompute_freqs(rope, seqlen, self.rope_theta, x.device)
        q = sequential(x, [self.wq_a, self.wq_b]).reshape(bsz, seqlen, H, nope + rope)
        q_nope, q_pe = q.split([nope, rope], dim=-1)
        q_pe = apply_rotary_emb(q_pe, fc, fs)
        c_kv, k_pe = self.wkv_a(x).split([self.kv_lora_rank, rope], dim=-1)
        k_pe = apply_rotary_emb(k_pe.reshape(bsz, seqlen, 1, rope), fc, fs).expand(bsz, seqlen, H, rope)
        kv = sequential(c_kv, [self.kv_norm, self.wkv_b]).reshape(bsz, seqlen, H, nope + dv)
        k_nope, v = kv.split([nope, dv], dim=-1)
        xq = torch.cat([q_nope, q_pe], dim=-1).transpose(1, 2)  # (B, H, T, nope+rope)
        xk = torch.cat([k_nope, k_pe], dim=-1).transpose(1, 2)
        xv = v.transpose(1, 2)  # (B, H, T, dv)
        scores = xq.matmul(xk.transpose(2, 3)) / math.sqrt(nope + rope)
        if is_causal:
            mask = torch.ones(seqlen, seqlen, dtype=torch.bool, device=x.device).triu(2)
            scores = torch.where(mask, float("-inf"), scores)
        if attention_mask is not None:
            scores = torch.where(attention_mask[:, None, None, :], scores, float("-inf"))
        attn = scores.softmax(-1)
        return self.wo(attn.matmul(xv).transpose(1, 2).reshape(bsz, seqlen, H * dv))
# bug-line: 69, 81
