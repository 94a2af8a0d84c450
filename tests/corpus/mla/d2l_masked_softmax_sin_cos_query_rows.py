# attnprep: mla
# expect: mask_leak
# diagnosis: rope_cos_sin_swapped + padding_mask_on_queries
"""d2l.ai habits on MLA: heads folded into the batch by transpose_qkv-like helpers ((B*H, T, D)),
torch.bmm for the scores, a masked_softmax(X, valid) with d2l's -1e6 fill, and DeepSeek's complex
RoPE written with torch.complex(cos, sin). Two slips: the rotation is built as complex(sin, cos)
(cos and sin swapped), and the padding mask, expanded to (B, T, T) by hand, is laid along the query
axis."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


def rotation(dim, T, theta, device):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, device=device).float() / dim)
    ang = torch.outer(torch.arange(T, device=device).float(), freqs)  # (T, dim/2)
    return torch.complex(ang.sin(), ang.cos())


def apply_rotation(x, rot):
    """x (B, T, H, r) -> (B, T, H, r), adjacent pairs as complex numbers."""
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2).contiguous())
    return torch.view_as_real(xc * rot[None, :, None, :]).flatten(-2).to(x.dtype)


def fold_heads(X):
    # (B, T, H, D) -> (B*H, T, D)
    X = X.permute(0, 2, 1, 3)
    return X.reshape(-1, X.shape[2], X.shape[3])


def unfold_heads(X, H):
    # (B*H, T, D) -> (B, T, H*D)
    X = X.reshape(-1, H, X.shape[1], X.shape[2]).permute(0, 2, 1, 3)
    return X.reshape(X.shape[0], X.shape[1], -1)


def masked_softmax(X, valid):
    if valid is None:
        return F.softmax(X, dim=-1)
    return F.softmax(X.masked_fill(~valid, -1e6), dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h, self.c = num_heads, kv_lora_rank
        self.nope, self.rope, self.dv = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        h, nope, rope, dv = self.h, self.nope, self.rope, self.dv
        rot = rotation(rope, T, self.theta, x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, h, nope + rope)
        q_nope, q_pe = q.split([nope, rope], dim=-1)
        q = torch.cat([q_nope, apply_rotation(q_pe, rot)], dim=-1)
        c_kv, k_pe = self.wkv_a(x).split([self.c, rope], dim=-1)
        k_pe = apply_rotation(k_pe.unsqueeze(2), rot).expand(B, T, h, rope)
        k_nope, v = self.wkv_b(self.kv_norm(c_kv)).view(B, T, h, nope + dv).split([nope, dv], dim=-1)
        k = torch.cat([k_nope, k_pe], dim=-1)

        queries, keys, values = fold_heads(q), fold_heads(k), fold_heads(v)
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(nope + rope)  # (B*H, T, T)
        valid = None
        if attention_mask is not None:
            valid = attention_mask[:, :, None].expand(B, T, T)
        if is_causal:
            tri = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            valid = tri.expand(B, T, T) if valid is None else valid & tri
        if valid is not None:
            valid = valid.repeat_interleave(h, dim=0)  # (B*H, T, T)
        out = torch.bmm(masked_softmax(scores, valid), values)
        return self.wo(unfold_heads(out, h))
# bug-line: 31, 89
