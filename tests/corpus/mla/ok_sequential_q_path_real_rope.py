# attnprep: mla
# expect: passed
"""Correct: the query path an nn.Sequential(OrderedDict(wq_a, q_norm, wq_b)); interleaved RoPE in real arithmetic (x[0::2], x[1::2] stacked back); nope and rope scores as two einsums."""
from collections import OrderedDict

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)


def rope_pairs(x, pos, theta):
    """Interleaved pairs (x[2i], x[2i+1]) rotated by pos * theta^(-2i/r), in real arithmetic. x: (..., T, H, r)."""
    r = x.shape[-1]
    inv = theta ** (-torch.arange(0, r, 2, device=x.device, dtype=torch.float32) / r)
    ang = pos.float()[:, None] * inv[None]                     # (T, r/2)
    cos, sin = ang.cos()[:, None], ang.sin()[:, None]          # (T, 1, r/2)
    x1, x2 = x[..., 0::2].float(), x[..., 1::2].float()
    out = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
    return out.flatten(-2).type_as(x)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.qk_head_dim = qk_nope_head_dim + qk_rope_head_dim
        self.rope_theta = rope_theta
        self.softmax_scale = self.qk_head_dim ** -0.5
        self.q_path = nn.Sequential(OrderedDict(
            wq_a=nn.Linear(d_model, q_lora_rank, bias=False),
            q_norm=RMSNorm(q_lora_rank),
            wq_b=nn.Linear(q_lora_rank, num_heads * self.qk_head_dim, bias=False),
        ))
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, seqlen, _ = x.size()
        pos = torch.arange(seqlen, device=x.device)
        q = self.q_path(x).view(bsz, seqlen, self.n_heads, self.qk_head_dim)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_pe = rope_pairs(q_pe, pos, self.rope_theta)
        kv = self.wkv_a(x)
        kv, k_pe = torch.split(kv, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        k_pe = rope_pairs(k_pe.unsqueeze(2), pos, self.rope_theta)
        kv = self.wkv_b(self.kv_norm(kv)).view(bsz, seqlen, self.n_heads, self.qk_nope_head_dim + self.v_head_dim)
        k_nope, v = torch.split(kv, [self.qk_nope_head_dim, self.v_head_dim], dim=-1)
        scores = (torch.einsum("bshd,bthd->bsht", q_nope, k_nope)
                  + torch.einsum("bshr,btr->bsht", q_pe, k_pe.squeeze(2))) * self.softmax_scale
        mask = torch.zeros(bsz, seqlen, 1, seqlen, device=x.device)
        if is_causal:
            mask = mask + torch.full((seqlen, seqlen), float("-inf"), device=x.device).triu_(1)[None, :, None, :]
        if attention_mask is not None:
            mask = mask.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        scores = (scores + mask).softmax(dim=-1, dtype=torch.float32).type_as(x)
        x = torch.einsum("bsht,bthd->bshd", scores, v)
        return self.wo(x.flatten(2))
