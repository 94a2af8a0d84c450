# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_split_order + mla_scale_kv_rank
"""Punjabi comments; W_UK and W_UV sliced from wkv_b viewed per head as if each head's rows were
[v; nope] (values first), and the scores divided by the square root of the width the absorbed
product sums over (the latent rank plus the rope dims) instead of the query-key head width."""
import math

import torch
import torch.nn as nn


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
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.nope, self.rope, self.dv, self.c = num_heads, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, kv_lora_rank
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
        P = 0 if cache is None else cache[0].shape[1]
        # ਪੁੱਛਗਿੱਛ: ਘੱਟ-ਰੈਂਕ ਤੋਂ ਸਿਰਾਂ ਤੱਕ
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.H, self.nope + self.rope)
        q_nope, q_pe = q[..., : self.nope], q[..., self.nope :]
        kv_a = self.wkv_a(x)
        c_new, pe_new = kv_a[..., : self.c], kv_a[..., self.c :]
        # ਘੁੰਮਾਅ: ਹਰ ਨਵੇਂ ਟੋਕਨ ਦੀ ਅਸਲ ਥਾਂ
        freqs = precompute_freqs_cis(self.rope, P + T, self.theta, device=x.device)[P:]
        q_pe = apply_rotary_emb(q_pe, freqs)
        pe_new = apply_rotary_emb(pe_new[:, :, None], freqs)[:, :, 0]
        c_new = self.kv_norm(c_new)
        c_all = c_new if cache is None else torch.cat([cache[0], c_new], 1)
        pe_all = pe_new if cache is None else torch.cat([cache[1], pe_new], 1)
        # ਸੋਖੇ ਹੋਏ ਭਾਰ
        w = self.wkv_b.weight.view(self.H, self.nope + self.dv, self.c)
        w_uv, w_uk = w[:, : self.dv], w[:, self.dv :]
        score = torch.einsum("bthn,hnc,bsc->bhts", q_nope, w_uk, c_all)
        score = score + torch.einsum("bthr,bsr->bhts", q_pe, pe_all)
        score = score / math.sqrt(self.c + self.rope)
        S = c_all.shape[1]
        future = torch.arange(S, device=x.device)[None, :] > (torch.arange(T, device=x.device)[:, None] + P)
        score = score.masked_fill(future, float("-inf"))
        lat = torch.einsum("bhts,bsc->bthc", score.softmax(-1), c_all)
        out = torch.einsum("bthc,hvc->bthv", lat, w_uv).reshape(B, T, self.H * self.dv)
        return self.wo(out), (c_all, pe_all)
# bug-line: 69, 72
