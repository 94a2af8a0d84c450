# attnprep: mla
# expect: mask_leak
# diagnosis: mla_scale_partial + padding_mask_on_queries
"""MLA (absorbed-free naive form, DeepSeek names) with two mistakes: scores scaled by 1/sqrt(qk_nope_head_dim) only AND the padding mask on the query rows."""

import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)


def precompute_freqs_cis(dim, end, theta=10000.0, device=None):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, device=device)[: dim // 2].float() / dim))
    t = torch.arange(end, device=device).float()
    return torch.polar(torch.ones(end, dim // 2, device=device), torch.outer(t, freqs))


def apply_rotary_emb(x, freqs_cis):
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * freqs_cis.view(1, x.size(1), 1, -1)).flatten(3).type_as(x)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.n_heads, self.kv_lora_rank = num_heads, kv_lora_rank
        self.nope, self.rope, self.v_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.rope_theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        H = self.n_heads
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, self.nope + self.rope)
        q_nope, q_pe = q.split([self.nope, self.rope], dim=-1)
        c_kv, k_pe = self.wkv_a(x).split([self.kv_lora_rank, self.rope], dim=-1)
        freqs_cis = precompute_freqs_cis(self.rope, T, self.rope_theta, device=x.device)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis)
        kv = self.wkv_b(self.kv_norm(c_kv)).view(B, T, H, self.nope + self.v_dim)
        k_nope, v = kv.split([self.nope, self.v_dim], dim=-1)
        q = torch.cat([q_nope, q_pe], -1).transpose(1, 2)
        k = torch.cat([k_nope, k_pe.expand(B, T, H, self.rope)], -1).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.nope)
        if is_causal:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, :, None].bool(), float("-inf"))
        out = scores.softmax(-1) @ v.transpose(1, 2)
        return self.wo(out.transpose(1, 2).reshape(B, T, H * self.v_dim))
# bug-line: 60, 64
