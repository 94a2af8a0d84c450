# attnprep: mla
# expect: wrong_output
# diagnosis: norm_eps_convention
"""MLA whose RMSNorms use eps=1e-5 (Llama's convention) where the contract says 1e-6 (DeepSeek's)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rope_cos_sin(dim, seq_len, theta=10000.0, device=None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, device=device).float() / dim))  # (dim/2,)
    pos = torch.arange(seq_len, device=device).float()
    angles = pos[:, None] * inv_freq[None, :]  # (T, dim/2)
    return angles.cos(), angles.sin()


def apply_rope(x, cos, sin):
    # x: (..., T, dim); rotate each adjacent pair (x[2i], x[2i+1]) by angle t * inv_freq[i]
    x1 = x[..., 0::2]
    x2 = x[..., 1::2]
    out1 = x1 * cos - x2 * sin
    out2 = x1 * sin + x2 * cos
    return torch.stack([out1, out2], dim=-1).flatten(-2)  # interleave back


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x / rms * self.weight


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h = num_heads
        self.c = kv_lora_rank
        self.dn = qk_nope_head_dim
        self.dr = qk_rope_head_dim
        self.dv = v_head_dim
        self.theta = rope_theta

        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank, eps=1e-5)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank, eps=1e-5)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        h, dn, dr, dv = self.h, self.dn, self.dr, self.dv
        cos, sin = rope_cos_sin(dr, T, self.theta, x.device)  # (T, dr/2) each

        q = self.wq_b(self.q_norm(self.wq_a(x)))  # (B, T, h*(dn+dr))
        q = q.view(B, T, h, dn + dr).transpose(1, 2)  # (B, h, T, dn+dr)
        q_nope, q_pe = q[..., :dn], q[..., dn:]
        q_pe = apply_rope(q_pe, cos, sin)  # (B, h, T, dr)

        kv_a = self.wkv_a(x)  # (B, T, c+dr)
        c_kv, k_pe = kv_a[..., :self.c], kv_a[..., self.c:]
        k_pe = apply_rope(k_pe.unsqueeze(1), cos, sin)  # (B, 1, T, dr): one key for every head

        kv = self.wkv_b(self.kv_norm(c_kv)).view(B, T, h, dn + dv).transpose(1, 2)  # (B, h, T, dn+dv)
        k_nope, v = kv[..., :dn], kv[..., dn:]

        # [q_nope; q_pe] . [k_nope; k_pe] = q_nope . k_nope + q_pe . k_pe
        scores = q_nope @ k_nope.transpose(-1, -2) + q_pe @ k_pe.transpose(-1, -2)  # (B, h, T, T)
        scores = scores / math.sqrt(dn + dr)

        if is_causal:
            future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(future, -1e9)
        if attention_mask is not None:
            scores = scores.masked_fill(attention_mask[:, None, None, :] == 0, -1e9)

        attn = F.softmax(scores, dim=-1)
        out = attn @ v  # (B, h, T, dv)
        out = out.transpose(1, 2).contiguous().view(B, T, h * dv)
        return self.wo(out), attn
