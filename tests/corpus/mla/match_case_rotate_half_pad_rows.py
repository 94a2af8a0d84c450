# attnprep: mla
# expect: mask_leak
# diagnosis: rope_rotate_half + padding_mask_on_queries
"""Python 3.10 `match` statements: the mask logic dispatches on `match (attention_mask, is_causal)`
with class patterns, the RoPE helper on `match x.dim()`. The RoPE is written by hand in the
rotate-half form of Llama (halves, not DeepSeek's adjacent pairs), and the padding mask is laid on
the query rows (`[:, None, :, None]`) instead of the key columns."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * (h.square().mean(-1, keepdim=True) + self.eps).rsqrt()).to(x.dtype)


def rope(x, theta):
    match x.dim():
        case 4:  # (B, T, H, r)
            T, r = x.shape[1], x.shape[-1]
        case _:
            raise ValueError("rope expects (B, T, H, r)")
    inv = 1.0 / theta ** (torch.arange(0, r, 2, device=x.device).float() / r)
    ang = torch.outer(torch.arange(T, device=x.device).float(), inv)
    emb = torch.cat([ang, ang], -1)[None, :, None, :]
    x1, x2 = x[..., : r // 2], x[..., r // 2 :]
    rotated = torch.cat([-x2, x1], -1)
    return (x.float() * emb.cos() + rotated.float() * emb.sin()).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.n_heads, self.kv_lora_rank = num_heads, kv_lora_rank
        self.nope, self.rope, self.vd, self.theta = qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta
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
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, -1)
        q_nope, q_pe = q.split([self.nope, self.rope], -1)
        c_kv, k_pe = self.wkv_a(x).split([self.kv_lora_rank, self.rope], -1)
        k_nope, v = self.wkv_b(self.kv_norm(c_kv)).view(B, T, H, -1).split([self.nope, self.vd], -1)
        q_pe, k_pe = rope(q_pe, self.theta), rope(k_pe.unsqueeze(2), self.theta)
        q = torch.cat([q_nope, q_pe], -1).transpose(1, 2)
        k = torch.cat([k_nope, k_pe.expand_as(q_pe)], -1).transpose(1, 2)
        s = q @ k.transpose(-2, -1) * (self.nope + self.rope) ** -0.5
        neg = float("-inf")
        match (attention_mask, is_causal):
            case (None, False):
                pass
            case (None, True):
                s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), neg)
            case (torch.Tensor() as m, c):
                s = s.masked_fill(~m[:, None, :, None], neg)
                if c:
                    s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), neg)
        p = F.softmax(s, dim=-1)
        return self.wo((p @ v.transpose(1, 2)).transpose(1, 2).flatten(2))
# bug-line: 35, 37, 73
