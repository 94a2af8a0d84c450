# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_split_order + mla_scale_kv_rank
"""Mongolian comments; the absorbed weights split out of wkv_b viewed (H, nope + v, c) in the
order (value rows, key rows), and the softmax scale kept as a class-level rule that names the
latent rank as the width a score is summed over."""
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
    # Оноо хуваах өргөн: аль хэмжээсээр нийлбэр авна
    SCALE_WIDTH = "kv_lora_rank"

    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.kv_lora_rank = kv_lora_rank
        self.qk_head_dim = qk_nope_head_dim + qk_rope_head_dim
        self.rope_theta = rope_theta
        self.softmax_scale = getattr(self, self.SCALE_WIDTH) ** -0.5
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * self.qk_head_dim, bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        start_pos = 0 if cache is None else cache[0].size(1)
        end_pos = start_pos + seqlen
        # Асуулгын толгойнууд
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(bsz, seqlen, self.n_heads, self.qk_head_dim)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        freqs_cis = precompute_freqs_cis(self.qk_rope_head_dim, end_pos, self.rope_theta, device=x.device)[start_pos:end_pos]
        q_pe = apply_rotary_emb(q_pe, freqs_cis)
        kv, k_pe = torch.split(self.wkv_a(x), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis).squeeze(2)
        kv = self.kv_norm(kv)
        # Далд санах ой: хуучин нь эхэнд
        kv_cache = kv if cache is None else torch.cat([cache[0], kv], dim=1)
        pe_cache = k_pe if cache is None else torch.cat([cache[1], k_pe], dim=1)
        wkv_b = self.wkv_b.weight.view(self.n_heads, -1, self.kv_lora_rank)
        w_uv, w_uk = torch.split(wkv_b, [self.v_head_dim, self.qk_nope_head_dim], dim=1)
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, w_uk)
        scores = (torch.einsum("bshc,btc->bsht", q_nope, kv_cache) + torch.einsum("bshr,btr->bsht", q_pe, pe_cache)) * self.softmax_scale
        mask = torch.full((seqlen, end_pos), float("-inf"), device=x.device).triu(start_pos + 1)
        scores = scores + mask[None, :, None, :]
        scores = scores.softmax(dim=-1)
        o = torch.einsum("bsht,btc->bshc", scores, kv_cache)
        o = torch.einsum("bshc,hdc->bshd", o, w_uv)
        return self.wo(o.flatten(2)), (kv_cache, pe_cache)
# bug-line: 41, 75
