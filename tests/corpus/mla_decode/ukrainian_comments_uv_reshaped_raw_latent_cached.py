# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_absorb_transpose + mla_cache_before_norm
"""Коментарі українською (Ukrainian comments), the stub's DeepSeek rotary helpers kept, W_UK and W_UV
sliced once into named tensors; the raw latent cached and the whole cache normalised on each call,
and W_UV reshaped to (H, c, dv) where it needed a transpose."""
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
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.qk_nope_head_dim = qk_nope_head_dim
        self.qk_rope_head_dim = qk_rope_head_dim
        self.v_head_dim = v_head_dim
        self.rope_theta = rope_theta
        self.softmax_scale = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        H, nope, rope, dv, c = self.n_heads, self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim, self.kv_lora_rank
        start_pos = 0 if cache is None else cache[0].shape[1]  # скільки токенів уже в кеші
        end_pos = start_pos + seqlen
        freqs_cis = precompute_freqs_cis(rope, end_pos, self.rope_theta, x.device)[start_pos:end_pos]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(bsz, seqlen, H, nope + rope)
        q_nope, q_pe = q.split([nope, rope], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)
        kv, k_pe = self.wkv_a(x).split([c, rope], dim=-1)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis).squeeze(2)
        if cache is not None:  # старі токени спочатку
            kv = torch.cat([cache[0], kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        new_cache = (kv, k_pe)  # латент до нормалізації
        kv = self.kv_norm(kv)  # нормалізуємо весь кеш
        w = self.wkv_b.weight.view(H, nope + dv, c)  # рядки голова за головою
        w_uk = w[:, :nope]  # (H, nope, c)
        w_uv = w[:, nope:].reshape(H, c, dv)  # (H, c, dv)
        q_lat = torch.einsum("bshd,hdc->bshc", q_nope, w_uk)
        scores = (torch.einsum("bshc,btc->bsht", q_lat, kv) + torch.einsum("bshr,btr->bsht", q_pe, k_pe)) * self.softmax_scale
        mask = torch.ones(seqlen, end_pos, dtype=torch.bool, device=x.device).tril(start_pos)
        scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
        probs = scores.softmax(dim=-1)
        o = torch.einsum("bsht,btc->bshc", probs, kv)
        o = torch.einsum("bshc,hcd->bshd", o, w_uv)
        return self.wo(o.flatten(2)), new_cache
# bug-line: 71, 75
