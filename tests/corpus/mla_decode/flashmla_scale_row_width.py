# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_scale_kv_rank
"""FlashMLA-style: scaled by the width of the concatenated key row, sqrt(kv_lora_rank + rope), instead of sqrt(nope + rope)."""
import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rope(x, pos, theta):  # x (..., T, [H,] r) with pos (T,)
    r = x.shape[-1]
    inv = theta ** (-torch.arange(0, r, 2, device=x.device, dtype=torch.float32) / r)
    ang = pos.float()[:, None] * inv  # (T, r/2)
    if x.dim() == 4:
        ang = ang[:, None, :]
    cos, sin = ang.cos(), ang.sin()
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten(-2)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.c, self.dn, self.dr, self.dv, self.theta = num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        past = 0 if cache is None else cache[0].size(1)
        pos = torch.arange(past, past + T, device=x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.H, self.dn + self.dr)
        q_nope, q_pe = q.split([self.dn, self.dr], -1)
        q_pe = rope(q_pe, pos, self.theta)
        c_new, kpe_new = self.wkv_a(x).split([self.c, self.dr], -1)
        c_new, kpe_new = self.kv_norm(c_new), rope(kpe_new, pos, self.theta)
        c_kv = c_new if cache is None else torch.cat([cache[0], c_new], 1)
        k_pe = kpe_new if cache is None else torch.cat([cache[1], kpe_new], 1)
        w = self.wkv_b.weight.view(self.H, self.dn + self.dv, self.c)
        q_lat = torch.einsum("bthd,hdc->bthc", q_nope, w[:, : self.dn])
        q_full = torch.cat([q_lat, q_pe], -1)  # (B, T, H, c + r)
        k_full = torch.cat([c_kv, k_pe], -1)  # (B, S, c + r): one row per token, all heads
        s = torch.einsum("bthe,bse->bths", q_full, k_full) / math.sqrt(k_full.size(-1))
        S = c_kv.size(1)
        future = torch.arange(S, device=x.device)[None, :] > pos[:, None]  # (T, S)
        s = s.masked_fill(future[None, :, None, :], float("-inf"))
        p = s.softmax(-1)
        o_lat = torch.einsum("bths,bsc->bthc", p, k_full[..., : self.c])
        o = torch.einsum("bthc,hdc->bthd", o_lat, w[:, self.dn:])
        return self.wo(o.reshape(B, T, -1)), (c_kv, k_pe)
# bug-line: 58
