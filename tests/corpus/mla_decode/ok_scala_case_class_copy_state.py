# attnprep: mla_decode
# expect: passed
"""A Scala programmer's case class: the cache an immutable value class with `copy(**changes)` and
`appended(...)` returning new instances, `Option`-like `None` checks written as `getOrElse`
helpers, and pattern-like unapply into (c_kv, k_pe) at the boundary of forward."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    t = torch.arange(seq_len, dtype=torch.float64, device=device)
    angles = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x, freqs_cis):
    pairs = x.to(torch.float64).unflatten(-1, (-1, 2))
    pairs = pairs.clone(memory_format=torch.contiguous_format)
    x_c = torch.view_as_complex(pairs)
    y = x_c * freqs_cis[:, None, :]
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


class LatentCache:
    __slots__ = ("c_kv", "k_pe")

    def __init__(self, c_kv, k_pe):
        self.c_kv = c_kv
        self.k_pe = k_pe

    def copy(self, **changes):
        fields = {"c_kv": self.c_kv, "k_pe": self.k_pe}
        fields.update(changes)
        return LatentCache(**fields)

    def appended(self, c_kv, k_pe):
        return self.copy(c_kv=torch.cat([self.c_kv, c_kv], dim=1), k_pe=torch.cat([self.k_pe, k_pe], dim=1))

    def unapply(self):
        return self.c_kv, self.k_pe


def get_or_else(option, default):
    return default if option is None else option


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.qk_nope_head_dim = qk_nope_head_dim
        self.qk_rope_head_dim = qk_rope_head_dim
        self.v_head_dim = v_head_dim
        self.rope_theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank, eps=1e-6)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank, eps=1e-6)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        nope, rope, c, H = self.qk_nope_head_dim, self.qk_rope_head_dim, self.kv_lora_rank, self.n_heads
        empty = LatentCache(x.new_zeros(bsz, 0, c), x.new_zeros(bsz, 0, rope))
        state = empty if cache is None else LatentCache(*cache)
        start_pos = state.c_kv.size(1)
        end_pos = start_pos + seqlen
        freqs_cis = precompute_freqs_cis(rope, end_pos, self.rope_theta, device=x.device)[start_pos:end_pos]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(bsz, seqlen, H, nope + rope)
        q_nope, q_pe = torch.split(q, [nope, rope], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)
        kv, k_pe = torch.split(self.wkv_a(x), [c, rope], dim=-1)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis).squeeze(2)
        state = state.appended(self.kv_norm(kv), k_pe)
        kv_cache, pe_cache = state.unapply()
        wkv_b = self.wkv_b.weight.view(H, -1, c)
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :nope])
        scale = get_or_else(None, (nope + rope) ** -0.5)
        scores = (torch.einsum("bshc,btc->bsht", q_nope, kv_cache)
                  + torch.einsum("bshr,btr->bsht", q_pe, pe_cache)) * scale
        mask = torch.full((seqlen, end_pos), float("-inf"), device=x.device).triu(start_pos + 1)
        scores = scores + mask[:, None, :]
        scores = scores.softmax(dim=-1, dtype=torch.float32).type_as(x)
        out = torch.einsum("bsht,btc->bshc", scores, kv_cache)
        out = torch.einsum("bshc,hdc->bshd", out, wkv_b[:, -self.v_head_dim:])
        return self.wo(out.flatten(2)), state.unapply()
