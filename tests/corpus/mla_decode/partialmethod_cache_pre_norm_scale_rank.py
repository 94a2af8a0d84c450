# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_cache_before_norm + mla_scale_kv_rank
"""functools.partialmethod habits: one _project(kind) method bound three ways (_queries, _latents,
_rope_keys); the latent was cached before kv_norm (the normalised copy only used for this step), and
the scale was taken from the latent rank."""
import math
from functools import partialmethod

import torch
import torch.nn as nn


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
        self.n_heads, self.kv_rank = num_heads, kv_lora_rank
        self.nope, self.rope, self.dv = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.softmax_scale = 1.0 / math.sqrt(kv_lora_rank)
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def _project(self, x, kind):
        if kind == "queries":
            B, T, _ = x.shape
            return self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.n_heads, self.nope + self.rope)
        a = self.wkv_a(x)
        return a[..., :self.kv_rank] if kind == "latents" else a[..., self.kv_rank:]

    _queries = partialmethod(_project, kind="queries")
    _latents = partialmethod(_project, kind="latents")
    _rope_keys = partialmethod(_project, kind="rope_keys")

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        past = 0 if cache is None else cache[0].size(1)
        fc = precompute_freqs_cis(self.rope, past + T, self.theta, x.device)[past:]
        q = self._queries(x)
        q_nope, q_pe = q[..., :self.nope], apply_rotary_emb(q[..., self.nope:], fc)
        c_kv = self._latents(x)
        normed = self.kv_norm(c_kv)
        k_pe = apply_rotary_emb(self._rope_keys(x).unsqueeze(2), fc).squeeze(2)
        past_c = normed[:, :0] if cache is None else cache[0]
        past_pe = k_pe[:, :0] if cache is None else cache[1]
        latents = torch.cat([past_c, normed], dim=1)
        k_pe = torch.cat([past_pe, k_pe], dim=1)
        new_cache = (torch.cat([past_c, c_kv], dim=1), k_pe)
        S = latents.size(1)
        w = self.wkv_b.weight.view(self.n_heads, self.nope + self.dv, self.kv_rank)
        q_abs = torch.einsum("bthd,hdc->bthc", q_nope, w[:, :self.nope])
        scores = (torch.einsum("bthc,bsc->bths", q_abs, latents)
                  + torch.einsum("bthr,bsr->bths", q_pe, k_pe)) * self.softmax_scale
        allowed = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(diagonal=past)
        scores = scores.masked_fill(~allowed.unsqueeze(1), float("-inf"))
        o = torch.einsum("bths,bsc->bthc", scores.softmax(dim=-1), latents)
        o = torch.einsum("bthc,hdc->bthd", o, w[:, self.nope:])
        return self.wo(o.flatten(2)), new_cache
# bug-line: 43, 76
