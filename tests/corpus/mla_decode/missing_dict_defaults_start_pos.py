# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_rope_position_zero
"""A dict subclass with __missing__ as the step's context: keys never set fall back to a defaults
table; the rotations' start position is read from it, and nothing ever sets it, so every step's
tokens are rotated from position 0."""
import math

import torch
import torch.nn as nn


class StepContext(dict):
    DEFAULTS = {"start_pos": 0, "fill": float("-inf")}

    def __missing__(self, key):
        return self.DEFAULTS[key]


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float64, device=device), freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x, freqs_cis):
    z = torch.view_as_complex(x.to(torch.float64).unflatten(-1, (-1, 2)).contiguous())
    return torch.view_as_real(z * freqs_cis[:, None, :]).flatten(-2).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h, self.c = num_heads, kv_lora_rank
        self.nope, self.rope, self.dv = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.scale = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        ctx = StepContext()
        past = 0 if cache is None else cache[0].shape[1]
        start = ctx["start_pos"]
        fc = precompute_freqs_cis(self.rope, start + T, self.theta, x.device)[start:]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.h, self.nope + self.rope)
        q_nope, q_pe = q.split([self.nope, self.rope], -1)
        q_pe = apply_rotary_emb(q_pe, fc)
        c_kv, k_pe = self.wkv_a(x).split([self.c, self.rope], -1)
        c_kv = self.kv_norm(c_kv)
        k_pe = apply_rotary_emb(k_pe[:, :, None], fc)[:, :, 0]
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], 1)
            k_pe = torch.cat([cache[1], k_pe], 1)
        S = c_kv.shape[1]
        w = self.wkv_b.weight.view(self.h, self.nope + self.dv, self.c)
        q_lat = torch.einsum("bthd,hdc->bthc", q_nope, w[:, :self.nope])
        scores = (torch.einsum("bthc,bsc->bths", q_lat, c_kv)
                  + torch.einsum("bthr,bsr->bths", q_pe, k_pe)) * self.scale
        allowed = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(past)
        scores = scores.masked_fill(~allowed[:, None, :], ctx["fill"])
        o = torch.einsum("bths,bsc->bthc", scores.softmax(-1), c_kv)
        o = torch.einsum("bthc,hdc->bthd", o, w[:, self.nope:])
        return self.wo(o.reshape(B, T, -1)), (c_kv, k_pe)
# bug-line: 61
