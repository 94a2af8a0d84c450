# attnprep: mla
# expect: mask_leak
# diagnosis: norm_eps_convention + padding_mask_ignored
"""Armenian comments and an own RMSNorm class whose eps default was taken from Llama's configs
(1e-5, not DeepSeek's 1e-6) and never passed by the constructor; the padding mask kept in a local
that the masking step never reads (only the causal mask is applied)."""
import math

import torch
import torch.nn as nn


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    t = torch.arange(seq_len, dtype=torch.float64, device=device)
    angles = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x, freqs_cis):
    pairs = x.to(torch.float64).unflatten(-1, (-1, 2))
    pairs = pairs.clone(memory_format=torch.contiguous_format)
    x_c = torch.view_as_complex(pairs)
    y = x_c * freqs_cis[:, None, :]
    return torch.view_as_real(y).flatten(-2).to(x.dtype)


class LatentRMSNorm(nn.Module):
    # Նորմավորում միջին քառակուսով
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h = num_heads
        self.nope, self.rope, self.vd = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.kv_rank = kv_lora_rank
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = LatentRMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = LatentRMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        # Հարցումներ՝ սեղմված ներկայացումից
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.h, self.nope + self.rope)
        q_nope, q_pe = torch.split(q, [self.nope, self.rope], dim=-1)
        c_kv, k_pe = torch.split(self.wkv_a(x), [self.kv_rank, self.rope], dim=-1)
        freqs_cis = precompute_freqs_cis(self.rope, T, self.theta, device=x.device)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)
        k_pe = apply_rotary_emb(k_pe[:, :, None, :], freqs_cis)
        kv = self.wkv_b(self.kv_norm(c_kv)).view(B, T, self.h, self.nope + self.vd)
        k_nope, v = torch.split(kv, [self.nope, self.vd], dim=-1)
        q = torch.cat([q_nope, q_pe], -1).transpose(1, 2)  # (B, H, T, nope+rope)
        k = torch.cat([k_nope, k_pe.expand(B, T, self.h, self.rope)], -1).transpose(1, 2)
        v = v.transpose(1, 2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.nope + self.rope)
        # Դիմակներ՝ լրացման և պատճառական
        blocked = torch.zeros(B, 1, T, T, dtype=torch.bool, device=x.device)
        keep_pad = None if attention_mask is None else ~attention_mask[:, None, None, :]
        if is_causal:
            blocked = blocked | torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(blocked, float("-inf"))
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, self.h * self.vd)
        return self.wo(out)
# bug-line: 30, 76
