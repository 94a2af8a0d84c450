# attnprep: mla_decode
# expect: passed
"""Correct: SGLang's forward_absorb: w_kc / w_vc cut from wkv_b.weight, heads as the batch of torch.bmm for the absorbed query and for the value up-projection."""
import math

import torch
import torch.nn as nn


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float64, device=device), freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x, freqs_cis):
    xc = torch.view_as_complex(x.double().unflatten(-1, (-1, 2)).contiguous())
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
    """SGLang's forward_absorb: w_kc / w_vc cut from wkv_b.weight, torch.bmm with heads as the batch."""

    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_local_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.scaling = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5
        self.rope_theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def _w_kc_w_vc(self):
        w = self.wkv_b.weight.unflatten(0, (-1, self.qk_nope_head_dim + self.v_head_dim))  # (H, nope+v, c)
        w_kc, w_vc = w.split([self.qk_nope_head_dim, self.v_head_dim], dim=1)
        return w_kc.transpose(1, 2), w_vc                                                  # (H, c, nope), (H, v, c)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H = self.num_local_heads
        start = 0 if cache is None else cache[0].shape[1]
        freqs = precompute_freqs_cis(self.qk_rope_head_dim, start + T, self.rope_theta, device=x.device)[start:]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B * T, H, -1)
        q_nope, q_pe = q.split([self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_pe = apply_rotary_emb(q_pe.view(B, T, H, -1), freqs)                              # (B, T, H, rope)
        latent, k_pe = self.wkv_a(x).split([self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        latent = self.kv_norm(latent)
        k_pe = apply_rotary_emb(k_pe[:, :, None, :], freqs)[:, :, 0]
        if cache is not None:
            latent = torch.cat((cache[0], latent), dim=1)
            k_pe = torch.cat((cache[1], k_pe), dim=1)
        w_kc, w_vc = self._w_kc_w_vc()
        q_nope_out = torch.bmm(q_nope.transpose(0, 1), w_kc.transpose(1, 2))                 # (H, B*T, c)
        q_nope_out = q_nope_out.transpose(0, 1).view(B, T, H, self.kv_lora_rank)
        S = latent.shape[1]
        attn = (torch.einsum("bthc,bsc->bhts", q_nope_out, latent)
                + torch.einsum("bthr,bsr->bhts", q_pe, k_pe)) * self.scaling
        i = torch.arange(T, device=x.device)[:, None] + start
        j = torch.arange(S, device=x.device)[None, :]
        attn = attn.masked_fill(j > i, float("-inf")).softmax(-1, dtype=torch.float32).to(x.dtype)
        o = torch.einsum("bhts,bsc->bthc", attn, latent).reshape(B * T, H, self.kv_lora_rank)
        attn_bmm_output = torch.bmm(o.transpose(0, 1), w_vc.transpose(1, 2))               # (H, B*T, v)
        out = attn_bmm_output.transpose(0, 1).reshape(B, T, H * self.v_head_dim)
        return self.wo(out), (latent, k_pe)
