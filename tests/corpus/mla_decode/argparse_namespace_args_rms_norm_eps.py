# attnprep: mla_decode
# expect: wrong_output
# diagnosis: norm_eps_convention
"""Arguments as an argparse.Namespace (the way training scripts pass `args` everywhere): the module
keeps `self.args`, reads every size from it, and the norms take `args.rms_norm_eps`; DeepSeek's
absorbed decode with einsum."""
import argparse

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
    def __init__(self, dim, eps):
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
        args = self.args = argparse.Namespace(
            dim=d_model, n_heads=num_heads, q_lora_rank=q_lora_rank, kv_lora_rank=kv_lora_rank,
            qk_nope_head_dim=qk_nope_head_dim, qk_rope_head_dim=qk_rope_head_dim, v_head_dim=v_head_dim,
            rope_theta=rope_theta,
            rms_norm_eps=1e-5,
        )
        self.softmax_scale = (args.qk_nope_head_dim + args.qk_rope_head_dim) ** -0.5
        self.wq_a = nn.Linear(args.dim, args.q_lora_rank, bias=False)
        self.q_norm = RMSNorm(args.q_lora_rank, args.rms_norm_eps)
        self.wq_b = nn.Linear(args.q_lora_rank, args.n_heads * (args.qk_nope_head_dim + args.qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(args.dim, args.kv_lora_rank + args.qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(args.kv_lora_rank, args.rms_norm_eps)
        self.wkv_b = nn.Linear(args.kv_lora_rank, args.n_heads * (args.qk_nope_head_dim + args.v_head_dim), bias=False)
        self.wo = nn.Linear(args.n_heads * args.v_head_dim, args.dim, bias=False)

    def forward(self, x, cache=None):
        a = self.args
        bsz, seqlen, _ = x.shape
        start_pos = 0 if cache is None else cache[0].size(1)
        end_pos = start_pos + seqlen
        freqs_cis = precompute_freqs_cis(a.qk_rope_head_dim, end_pos, a.rope_theta, device=x.device)[start_pos:end_pos]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(bsz, seqlen, a.n_heads, -1)
        q_nope, q_pe = torch.split(q, [a.qk_nope_head_dim, a.qk_rope_head_dim], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)
        kv, k_pe = torch.split(self.wkv_a(x), [a.kv_lora_rank, a.qk_rope_head_dim], dim=-1)
        kv = self.kv_norm(kv)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis).squeeze(2)
        kv_cache = kv if cache is None else torch.cat([cache[0], kv], dim=1)
        pe_cache = k_pe if cache is None else torch.cat([cache[1], k_pe], dim=1)
        wkv_b = self.wkv_b.weight.view(a.n_heads, -1, a.kv_lora_rank)
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :a.qk_nope_head_dim])
        scores = (torch.einsum("bshc,btc->bsht", q_nope, kv_cache)
                  + torch.einsum("bshr,btr->bsht", q_pe, pe_cache)) * self.softmax_scale
        mask = torch.full((seqlen, end_pos), float("-inf"), device=x.device).triu_(start_pos + 1)
        scores = scores + mask.unsqueeze(1)
        scores = scores.softmax(dim=-1, dtype=torch.float32).type_as(x)
        out = torch.einsum("bsht,btc->bshc", scores, kv_cache)
        out = torch.einsum("bshc,hdc->bshd", out, wkv_b[:, -a.v_head_dim:])
        return self.wo(out.flatten(2)), (kv_cache, pe_cache)
# bug-line: 45
