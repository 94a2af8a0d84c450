# attnprep: mla
# expect: mask_leak
# diagnosis: mla_norm_skipped + padding_mask_on_queries
"""Heads built by comprehensions: one list entry per head (q_h, k_h, v_h sliced from the
projections), the per-head attention a nested function, the results stacked; the query path as a
tuple of stages folded by a for loop; the stub's ready-made helpers."""
import math

import torch
import torch.nn as nn


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
        self.h, self.c = num_heads, kv_lora_rank
        self.nope, self.rope, self.vd = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)
        self.q_stages = (self.wq_a, self.wq_b)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        dq = self.nope + self.rope
        freqs = precompute_freqs_cis(self.rope, T, self.theta, device=x.device)
        q = x
        for stage in self.q_stages:
            q = stage(q)
        q = q.view(B, T, self.h, dq)
        q = torch.cat([q[..., :self.nope], apply_rotary_emb(q[..., self.nope:], freqs)], dim=-1)
        c_kv, k_pe = self.wkv_a(x).split([self.c, self.rope], dim=-1)
        k_pe = apply_rotary_emb(k_pe[:, :, None, :], freqs)[:, :, 0]  # (B, T, rope)
        kv = self.wkv_b(self.kv_norm(c_kv)).view(B, T, self.h, self.nope + self.vd)
        scale = 1.0 / math.sqrt(dq)

        def head(i):
            q_i = q[:, :, i]  # (B, T, dq)
            k_i = torch.cat([kv[:, :, i, :self.nope], k_pe], dim=-1)  # (B, T, dq)
            v_i = kv[:, :, i, self.nope:]  # (B, T, vd)
            s = q_i @ k_i.transpose(1, 2) * scale  # (B, T, T)
            if attention_mask is not None:
                s = s.masked_fill(~attention_mask[:, :, None], float("-inf"))
            if is_causal:
                s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
            return s.softmax(-1) @ v_i  # (B, T, vd)

        heads = [head(i) for i in range(self.h)]
        return self.wo(torch.cat(heads, dim=-1))
# bug-line: 52, 74
