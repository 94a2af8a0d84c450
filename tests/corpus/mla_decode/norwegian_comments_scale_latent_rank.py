# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_scale_kv_rank
"""Kommentarer på norsk (Norwegian comments and names: hoder, latent, forrige, nye, skala,
poengsum); the absorbed path, with the scale taken from the width the scores are computed in
after absorption (the latent rank) rather than the per-head query width."""
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


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.hoder = num_heads  # antall hoder
        self.latent = kv_lora_rank
        self.nope, self.rope, self.dv = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank, eps=1e-6)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank, eps=1e-6)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H = self.hoder
        forrige = 0 if cache is None else cache[0].shape[1]  # lengden av det som er lagret
        S = forrige + T
        rotasjoner = precompute_freqs_cis(self.rope, S, self.theta, device=x.device)[forrige:]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, self.nope + self.rope)
        q_nope, q_pe = q.split([self.nope, self.rope], dim=-1)
        q_pe = apply_rotary_emb(q_pe, rotasjoner)
        c_kv, k_pe = self.wkv_a(x).split([self.latent, self.rope], dim=-1)
        c_kv = self.kv_norm(c_kv)
        k_pe = apply_rotary_emb(k_pe[:, :, None], rotasjoner)[:, :, 0]
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        vekter = self.wkv_b.weight.view(H, self.nope + self.dv, self.latent)
        q_latent = torch.einsum("bthd,hdc->bthc", q_nope, vekter[:, :self.nope])
        skala = 1.0 / math.sqrt(self.latent)  # poengene lever i latentrommet
        poengsum = (torch.einsum("bthc,bsc->bths", q_latent, c_kv)
                    + torch.einsum("bthr,bsr->bths", q_pe, k_pe)) * skala
        tillatt = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(diagonal=forrige)
        poengsum = poengsum.masked_fill(~tillatt[:, None, :], float("-inf"))
        sannsynlighet = poengsum.softmax(dim=-1)
        ut = torch.einsum("bths,bsc->bthc", sannsynlighet, c_kv)
        ut = torch.einsum("bthc,hdc->bthd", ut, vekter[:, self.nope:])
        return self.wo(ut.reshape(B, T, H * self.dv)), (c_kv, k_pe)
# bug-line: 74
