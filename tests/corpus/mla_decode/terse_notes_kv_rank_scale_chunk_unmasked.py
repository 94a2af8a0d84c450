# attnprep: mla_decode
# expect: mask_leak
# diagnosis: mla_scale_kv_rank + cache_chunk_unmasked
"""Interview notes, terse: one-letter names everywhere (n, c, r, p, e for nope / latent / rope /
past / value width), the absorbed product as two einsums, `tril` only on the first call. Two
slips: the scale is 1/sqrt(c), the latent width, and the causal mask is only built when there is
no cache (a chunk of new tokens after a cache sees its own future)."""

import math

import torch
import torch.nn as nn


class N(nn.Module):
    def __init__(s, d, e=1e-6):
        super().__init__()
        s.e = e
        s.weight = nn.Parameter(torch.ones(d))

    def forward(s, x):
        f = x.float()
        return s.weight * (f * (f * f).mean(-1, keepdim=True).add(s.e).rsqrt()).to(x.dtype)


def rot(x, o, th):
    # x (B, T, H, r), positions o .. o+T-1, adjacent pairs
    T, r = x.shape[1], x.shape[-1]
    w = th ** (-torch.arange(0, r, 2, device=x.device).float() / r)
    a = torch.arange(o, o + T, device=x.device).float()[:, None] * w
    z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(a), a)[None, :, None]).flatten(-2).to(x.dtype)


class MLADecode(nn.Module):
    def __init__(s, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        s.h, s.c, s.n, s.r, s.e, s.th = num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta
        s.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        s.q_norm = N(q_lora_rank)
        s.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        s.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        s.kv_norm = N(kv_lora_rank)
        s.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        s.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(s, x, cache=None):
        b, t, _ = x.shape
        h, c, n, r, e = s.h, s.c, s.n, s.r, s.e
        p = 0 if cache is None else cache[0].shape[1]
        q = s.wq_b(s.q_norm(s.wq_a(x))).view(b, t, h, n + r)
        qn, qr = q[..., :n], rot(q[..., n:], p, s.th)
        a = s.wkv_a(x)
        l, kr = s.kv_norm(a[..., :c]), rot(a[..., None, c:], p, s.th)[:, :, 0]
        if cache is not None:
            l, kr = torch.cat([cache[0], l], 1), torch.cat([cache[1], kr], 1)
        w = s.wkv_b.weight.view(h, n + e, c)
        qa = torch.einsum("bthn,hnc->bthc", qn, w[:, :n])
        z = torch.einsum("bthc,bsc->bths", qa, l) + torch.einsum("bthr,bsr->bths", qr, kr)
        z = z / math.sqrt(c)
        if cache is None:
            m = torch.ones(t, p + t, dtype=torch.bool, device=x.device).tril(p)
            z = z.masked_fill(~m[:, None], float("-inf"))
        y = torch.einsum("bths,bsc->bthc", z.softmax(-1), l)
        y = torch.einsum("bthc,hec->bthe", y, w[:, n:])
        return s.wo(y.reshape(b, t, h * e)), (l, kr)
# bug-line: 61, 62
