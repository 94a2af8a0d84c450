# attnprep: mla
# expect: mask_leak
# diagnosis: mask_fill_zero
"""Buffered RoPE table, one boolean mask filled with 0.0 instead of finfo.min."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def precompute_freqs_cis(dim, max_seq_len, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: dim // 2].float() / dim))
    t = torch.arange(max_seq_len, dtype=torch.float32)
    freqs = torch.outer(t, freqs)  # (max_seq_len, dim/2)
    return torch.polar(torch.ones_like(freqs), freqs)  # complex64


def apply_rotary_emb(x, freqs_cis):
    # x: (B, T, H, dim), freqs_cis: (T, dim/2)
    pairs = x.float().unflatten(-1, (-1, 2)).clone(memory_format=torch.contiguous_format)  # view_as_complex needs even strides/offset
    x_ = torch.view_as_complex(pairs)  # (B, T, H, dim/2)
    x_out = torch.view_as_real(x_ * freqs_cis[None, :, None, :]).flatten(-2)
    return x_out.type_as(x)


class MultiHeadLatentAttention(nn.Module):
    max_seq_len = 4096

    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.nope = qk_nope_head_dim
        self.rope = qk_rope_head_dim
        self.v_dim = v_head_dim
        self.scale = 1.0 / math.sqrt(qk_nope_head_dim + qk_rope_head_dim)

        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = nn.RMSNorm(q_lora_rank, eps=1e-6)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = nn.RMSNorm(kv_lora_rank, eps=1e-6)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)
        self.register_buffer("freqs_cis", precompute_freqs_cis(qk_rope_head_dim, self.max_seq_len, rope_theta), persistent=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        H = self.num_heads
        freqs_cis = self.freqs_cis[:T]  # (T, rope/2)

        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, self.nope + self.rope)
        q_nope, q_pe = q.split([self.nope, self.rope], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)

        c_kv, k_pe = self.wkv_a(x).split([self.kv_lora_rank, self.rope], dim=-1)
        k_pe = apply_rotary_emb(k_pe[:, :, None, :], freqs_cis)  # (B, T, 1, rope)
        k_nope, v = self.wkv_b(self.kv_norm(c_kv)).view(B, T, H, self.nope + self.v_dim).split([self.nope, self.v_dim], dim=-1)

        q = torch.cat([q_nope, q_pe], dim=-1).permute(0, 2, 1, 3)  # (B, H, T, nope+rope)
        k = torch.cat([k_nope, k_pe.expand(-1, -1, H, -1)], dim=-1).permute(0, 2, 1, 3)  # (B, H, T, nope+rope)
        v = v.permute(0, 2, 1, 3)  # (B, H, T, v)

        scores = torch.matmul(q, k.transpose(-1, -2)) * self.scale  # (B, H, T, T)
        keep = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if attention_mask is not None:
            keep = keep & attention_mask.view(B, 1, 1, T)
        scores = scores.masked_fill(~keep, 0.0)
        probs = F.softmax(scores.float(), dim=-1).to(v.dtype)

        out = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(B, T, H * self.v_dim)
        return self.wo(out)
