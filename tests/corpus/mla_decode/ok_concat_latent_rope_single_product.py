# attnprep: mla_decode
# expect: passed
"""Correct: [q_lat; q_pe] against [c_kv; k_pe] in one product (FlashMLA's 576-wide keys) built with
torch.cat, scores on (B, H, T, S) via matmul, masks from F.pad of a tril block."""
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
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)


def freqs_cis(dim, end, theta, device):
    f = 1.0 / (theta ** (torch.arange(0, dim, 2, device=device).float() / dim))
    return torch.polar(torch.ones(end, dim // 2, device=device), torch.outer(torch.arange(end, device=device).float(), f))


def rotary(x, fc):  # x (B, T, ..., r), fc (T, r/2)
    z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    fc = fc.view(1, fc.shape[0], *([1] * (x.dim() - 3)), fc.shape[-1])
    return torch.view_as_real(z * fc).flatten(-2).type_as(x)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.c, self.n, self.r, self.dv = num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, c, n, r, dv = self.H, self.c, self.n, self.r, self.dv
        past = cache[0].shape[1] if cache is not None else 0
        fc = freqs_cis(r, past + T, self.theta, x.device)[past:]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, n + r)
        q_pe = rotary(q[..., n:], fc)
        kv_a = self.wkv_a(x)
        new_kv, new_pe = self.kv_norm(kv_a[..., :c]), rotary(kv_a[..., c:], fc)
        kv = new_kv if cache is None else torch.cat([cache[0], new_kv], 1)
        pe = new_pe if cache is None else torch.cat([cache[1], new_pe], 1)
        wkv_b = self.wkv_b.weight.view(H, n + dv, c)
        q_lat = torch.einsum("bthn,hnc->bhtc", q[..., :n], wkv_b[:, :n])
        q_all = torch.cat([q_lat, q_pe.transpose(1, 2)], -1)               # (B, H, T, c + r)
        k_all = torch.cat([kv, pe], -1)[:, None]                          # (B, 1, S, c + r)
        s = q_all @ k_all.transpose(-1, -2) / math.sqrt(n + r)
        allowed = F.pad(torch.ones(T, T, dtype=torch.bool, device=x.device).tril(), (past, 0), value=True)
        s = s.masked_fill(~allowed, float("-inf"))
        o_lat = s.softmax(-1) @ kv[:, None]                               # (B, H, T, c)
        o = torch.einsum("bhtc,hvc->bthv", o_lat, wkv_b[:, n:]).reshape(B, T, H * dv)
        return self.wo(o), (kv, pe)
