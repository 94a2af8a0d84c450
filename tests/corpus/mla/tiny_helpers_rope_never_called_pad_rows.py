# attnprep: mla
# expect: mask_leak
# diagnosis: rope_skipped + padding_mask_on_queries
"""Small helper functions everywhere (heads / unheads / rotate / mask_keys / attend), each one line or
two, the module only wiring them. Two slips: the rotary helper is written but the positional parts
go into the keys and queries without it, and the padding mask is broadcast as (B, 1, T, 1), over
the query rows."""

import math

import torch
import torch.nn as nn


def heads(t, h):
    return t.unflatten(-1, (h, -1)).transpose(1, 2)  # (B, T, h*d) -> (B, h, T, d)


def unheads(t):
    return t.transpose(1, 2).flatten(2)


def angles(t_len, dim, theta, device):
    inv = theta ** (-torch.arange(0, dim, 2, device=device, dtype=torch.float32) / dim)
    return torch.outer(torch.arange(t_len, device=device, dtype=torch.float32), inv)  # (T, dim/2)


def rotate(x, ang):
    a, b = x.float()[..., 0::2], x.float()[..., 1::2]
    return torch.stack((a * ang.cos() - b * ang.sin(), a * ang.sin() + b * ang.cos()), -1).flatten(-2).type_as(x)


def mask_keys(s, keep):
    return s.masked_fill(~keep[:, None, :, None], float("-inf"))


def attend(q, k, v, scale, keep, causal):
    s = q @ k.transpose(-1, -2) * scale
    if keep is not None:
        s = mask_keys(s, keep)
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return s.softmax(-1) @ v


def rms(x, w, eps=1e-6):
    h = x.float()
    return w * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).type_as(x)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h, self.c, self.theta = num_heads, kv_lora_rank, rope_theta
        self.dn, self.dr, self.dv = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = nn.Module()
        self.q_norm.weight = nn.Parameter(torch.ones(q_lora_rank))
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = nn.Module()
        self.kv_norm.weight = nn.Parameter(torch.ones(kv_lora_rank))
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        ang = angles(T, self.dr, self.theta, x.device)
        q = heads(self.wq_b(rms(self.wq_a(x), self.q_norm.weight)), self.h)  # (B, h, T, dn+dr)
        c_kv, k_pe = self.wkv_a(x).split([self.c, self.dr], -1)
        kv = heads(self.wkv_b(rms(c_kv, self.kv_norm.weight)), self.h)  # (B, h, T, dn+dv)
        k_pe = k_pe[:, None].expand(B, self.h, T, self.dr)
        k = torch.cat([kv[..., :self.dn], k_pe], -1)
        v = kv[..., self.dn:]
        out = attend(q, k, v, 1 / math.sqrt(self.dn + self.dr), attention_mask, is_causal)
        return self.wo(unheads(out))
# bug-line: 34, 73
