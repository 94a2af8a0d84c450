# attnprep: mla
# expect: wrong_output
# diagnosis: mla_scale_sum_sqrt
"""Коментари на български (Bulgarian comments, Latin names: glavi, latentno, klyuch, stoynost,
mashtab); the softmax scale a property computed from the two per-head widths, written as
1 / (sqrt(nope) + sqrt(rope))."""
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


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.glavi = num_heads  # брой глави
        self.nope, self.rope, self.vdim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.latentno = kv_lora_rank  # латентна размерност
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank, eps=1e-6)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank, eps=1e-6)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    @property
    def mashtab(self):
        # мащаб на резултатите
        return 1.0 / (math.sqrt(self.nope) + math.sqrt(self.rope))

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        H = self.glavi
        zavarteni = precompute_freqs_cis(self.rope, T, self.theta, device=x.device)
        zayavka = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, self.nope + self.rope)
        q_nope, q_pe = zayavka.split([self.nope, self.rope], dim=-1)
        q_pe = apply_rotary_emb(q_pe, zavarteni)
        c_kv, k_pe = self.wkv_a(x).split([self.latentno, self.rope], dim=-1)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), zavarteni)  # (B, T, 1, rope) обща за главите
        kv = self.wkv_b(self.kv_norm(c_kv)).view(B, T, H, self.nope + self.vdim)
        k_nope, stoynost = kv.split([self.nope, self.vdim], dim=-1)
        klyuch = torch.cat([k_nope, k_pe.expand(B, T, H, self.rope)], dim=-1)
        q = torch.cat([q_nope, q_pe], dim=-1)
        rezultati = torch.einsum("bshd,bthd->bhst", q, klyuch) * self.mashtab
        if attention_mask is not None:
            rezultati = rezultati.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            badeshte = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            rezultati = rezultati.masked_fill(badeshte, float("-inf"))
        veroyatnosti = rezultati.softmax(dim=-1)
        izhod = torch.einsum("bhst,bthd->bshd", veroyatnosti, stoynost)
        return self.wo(izhod.reshape(B, T, H * self.vdim))
# bug-line: 60
