# attnprep: mla_decode
# expect: passed
"""Correct: DeepSeek-style absorbed decode where the absorbed query [q_nope·W_UK ; q_pe] and the cached
key [c_kv ; k_pe] are concatenated so one einsum gives the scores; wkv_b viewed (H, nope+dv, c);
RoPE with the stub's complex helpers at absolute positions."""
import math
import torch
import torch.nn as nn


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    ang = torch.outer(torch.arange(seq_len, dtype=torch.float64, device=device), freqs)
    return torch.polar(torch.ones_like(ang), ang)


def apply_rotary_emb(x, freqs_cis):
    xc = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], -1, 2).contiguous())
    return torch.view_as_real(xc * freqs_cis[:, None, :]).flatten(-2).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.n_heads, self.kv_lora_rank = num_heads, kv_lora_rank
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
        bsz, seqlen, _ = x.shape
        start = 0 if cache is None else cache[0].shape[1]
        end = start + seqlen
        freqs = precompute_freqs_cis(self.rope, end, self.theta, x.device)[start:end]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(bsz, seqlen, self.n_heads, -1)
        q_nope, q_pe = q.split([self.nope, self.rope], -1)
        q_pe = apply_rotary_emb(q_pe, freqs)
        kv, k_pe = self.wkv_a(x).split([self.kv_lora_rank, self.rope], -1)
        kv = self.kv_norm(kv)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs).squeeze(2)
        if cache is not None:
            kv, k_pe = torch.cat([cache[0], kv], 1), torch.cat([cache[1], k_pe], 1)
        w = self.wkv_b.weight.view(self.n_heads, -1, self.kv_lora_rank)
        q_lat = torch.einsum("bshd,hdc->bshc", q_nope, w[:, : self.nope])
        q_all = torch.cat([q_lat, q_pe], -1)              # (B, T, H, c + rope)
        k_all = torch.cat([kv, k_pe], -1)                 # (B, S, c + rope)
        scores = torch.einsum("bshx,btx->bsht", q_all, k_all) * self.scale
        mask = torch.full((seqlen, end), float("-inf"), device=x.device).triu_(start + 1)
        scores = (scores + mask[:, None, :]).softmax(-1, dtype=torch.float32).type_as(x)
        o = torch.einsum("bsht,btc->bshc", scores, kv)
        o = torch.einsum("bshc,hdc->bshd", o, w[:, -self.dv:])
        return self.wo(o.flatten(2)), (kv, k_pe)
