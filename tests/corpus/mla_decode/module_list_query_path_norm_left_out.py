# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_norm_skipped
"""The query path as an nn.ModuleList of its layers applied in a loop (`for layer in self.q_path`),
the latent path written out; the cache as a plain tuple, the absorbed weights by einsum on a view
of wkv_b's weight; the stub's ready-made helpers."""
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


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h, self.c, self.nope, self.rope, self.v = num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)
        self.q_path = nn.ModuleList([self.wq_a, self.wq_b])

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, c, nope, rope = self.h, self.c, self.nope, self.rope
        past = 0 if cache is None else cache[0].shape[1]
        freqs = precompute_freqs_cis(rope, past + T, self.theta, device=x.device)[past:]
        q = x
        for layer in self.q_path:
            q = layer(q)
        q_nope, q_pe = q.view(B, T, H, nope + rope).split([nope, rope], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs)
        c_kv, k_pe = self.wkv_a(x).split([c, rope], dim=-1)
        c_kv = self.kv_norm(c_kv)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs).squeeze(2)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        S = c_kv.shape[1]
        w = self.wkv_b.weight.view(H, nope + self.v, c)
        q_lat = torch.einsum("bthd,hdc->bthc", q_nope, w[:, :nope])
        scores = (torch.einsum("bthc,bsc->bhts", q_lat, c_kv) + torch.einsum("bthr,bsr->bhts", q_pe, k_pe)) / math.sqrt(nope + rope)
        scores = scores.masked_fill(~torch.ones(T, S, dtype=torch.bool, device=x.device).tril(S - T), float("-inf"))
        o = torch.einsum("bhts,bsc->bthc", scores.softmax(-1), c_kv)
        out = torch.einsum("bthc,hdc->bthd", o, w[:, nope:])
        return self.wo(out.reshape(B, T, H * self.v)), (c_kv, k_pe)
# bug-line: 51
