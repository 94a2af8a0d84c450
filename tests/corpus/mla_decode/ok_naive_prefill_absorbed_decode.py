# attnprep: mla_decode
# expect: passed
"""Correct: vLLM's split: the prefill (no cache) in the naive form with per-head keys and values, the decode steps absorbed on the latent."""
import math

import torch
import torch.nn as nn


def precompute_freqs_cis(dim, end, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    t = torch.arange(end, dtype=torch.float64, device=device)
    f = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(f), f)


def apply_rotary_emb(x, freqs_cis):
    dtype = x.dtype
    x = torch.view_as_complex(x.double().reshape(*x.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.view(1, x.size(1), 1, x.size(-1))
    return torch.view_as_real(x * freqs_cis).flatten(3).to(dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class MLADecode(nn.Module):
    """vLLM's split: the prefill (no cache) runs the naive form with k/v expanded per head, as
    compute-bound prefill kernels do; a decode step (cache given) runs the absorbed form on the latent."""

    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.n_heads, self.kv_lora_rank = num_heads, kv_lora_rank
        self.nope, self.rope, self.vd = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.softmax_scale = 1 / math.sqrt(qk_nope_head_dim + qk_rope_head_dim)
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        start = 0 if cache is None else cache[0].size(1)
        end = start + seqlen
        freqs_cis = precompute_freqs_cis(self.rope, end, self.theta, device=x.device)[start:end]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(bsz, seqlen, self.n_heads, -1)
        q_nope, q_pe = q.split([self.nope, self.rope], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)
        kv, k_pe = self.wkv_a(x).split([self.kv_lora_rank, self.rope], dim=-1)
        kv = self.kv_norm(kv)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis).squeeze(2)
        mask = torch.full((seqlen, end), float("-inf"), device=x.device).triu_(start + 1)
        if cache is None:
            kvh = self.wkv_b(kv).view(bsz, seqlen, self.n_heads, self.nope + self.vd)
            k_nope, v = kvh.split([self.nope, self.vd], dim=-1)
            qq = torch.cat([q_nope, q_pe], dim=-1)
            kk = torch.cat([k_nope, k_pe.unsqueeze(2).expand(-1, -1, self.n_heads, -1)], dim=-1)
            scores = torch.einsum("bshd,bthd->bsht", qq, kk) * self.softmax_scale + mask[:, None, :]
            out = torch.einsum("bsht,bthd->bshd", scores.softmax(-1, dtype=torch.float32).type_as(x), v)
            return self.wo(out.flatten(2)), (kv, k_pe)
        kv_all = torch.cat([cache[0], kv], dim=1)
        pe_all = torch.cat([cache[1], k_pe], dim=1)
        wkv_b = self.wkv_b.weight.view(self.n_heads, -1, self.kv_lora_rank)
        q_lat = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, : self.nope])
        scores = (torch.einsum("bshc,btc->bsht", q_lat, kv_all) + torch.einsum("bshr,btr->bsht", q_pe, pe_all)) * self.softmax_scale
        scores = (scores + mask[:, None, :]).softmax(dim=-1, dtype=torch.float32).type_as(x)
        o = torch.einsum("bsht,btc->bshc", scores, kv_all)
        o = torch.einsum("bshc,hdc->bshd", o, wkv_b[:, -self.vd:])
        return self.wo(o.flatten(2)), (kv_all, pe_all)
