# attnprep: mla
# expect: mask_leak
# diagnosis: padding_mask_ignored
"""Lambdas in a dict: the pipeline's small steps (`split_q`, `split_kv`, `heads`, `merge`) are
lambdas in a module-level STEPS table, and the masks are chosen by a `MASKS[(has_pad, causal)]`
lookup of lambdas too. The (True, True) entry was copied from the causal one: with is_causal the
key padding mask is dropped (padded keys stay visible); without it, padding is honoured."""

import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        y = x.float()
        return self.weight * (y / torch.sqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


def pair_rope(x, theta):
    T, r = x.shape[1], x.shape[-1]
    inv = theta ** (-(torch.arange(r // 2, device=x.device).float() * 2) / r)
    ang = torch.arange(T, device=x.device).float()[:, None] * inv[None, :]
    z = torch.view_as_complex(x.float().unflatten(-1, (r // 2, 2)).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(ang), ang)[None, :, None, :]).flatten(-2).to(x.dtype)


STEPS = {
    "heads": lambda t, B, T, H: t.view(B, T, H, -1),
    "bhtd": lambda t: t.permute(0, 2, 1, 3),
    "merge": lambda t, B, T: t.permute(0, 2, 1, 3).reshape(B, T, -1),
}

NEG = float("-inf")
MASKS = {
    (False, False): lambda s, pad, tri: s,
    (False, True): lambda s, pad, tri: s.masked_fill(~tri, NEG),
    (True, False): lambda s, pad, tri: s.masked_fill(~pad[:, None, None, :], NEG),
    (True, True): lambda s, pad, tri: s.masked_fill(~tri, NEG),
}


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.c = num_heads, kv_lora_rank
        self.dn, self.dr, self.dv, self.theta = qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        q = STEPS["heads"](self.wq_b(self.q_norm(self.wq_a(x))), B, T, self.H)
        q_nope, q_pe = q[..., : self.dn], pair_rope(q[..., self.dn :], self.theta)
        c_kv, k_pe = self.wkv_a(x)[..., : self.c], self.wkv_a(x)[..., self.c :]
        kv = STEPS["heads"](self.wkv_b(self.kv_norm(c_kv)), B, T, self.H)
        k_nope, v = kv[..., : self.dn], kv[..., self.dn :]
        k_pe = pair_rope(k_pe[:, :, None, :], self.theta).expand(B, T, self.H, self.dr)
        q = STEPS["bhtd"](torch.cat([q_nope, q_pe], -1))
        k = STEPS["bhtd"](torch.cat([k_nope, k_pe], -1))
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dn + self.dr)
        tri = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        s = MASKS[(attention_mask is not None, bool(is_causal))](s, attention_mask, tri)
        out = torch.matmul(torch.softmax(s, -1), STEPS["bhtd"](v))
        return self.wo(STEPS["merge"](out, B, T))
# bug-line: 45
