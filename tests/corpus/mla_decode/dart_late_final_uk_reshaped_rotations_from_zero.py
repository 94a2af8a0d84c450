# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_absorb_transpose + mla_rope_position_zero
"""A Dart programmer's habits: `late final` fields set once in a private `_init` method (here
attributes assigned after the layers), named optional parameters with defaults, getters for derived
sizes, `_private` helpers; the absorbed key weight reshaped to (H, c, nope) instead of transposed,
and the rotations built for positions 0 .. T_new - 1 on every call, through a getter-like helper
whose offset parameter defaults to zero."""
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
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank, eps=1e-6)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank, eps=1e-6)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)
        self._init(num_heads=num_heads, rank=kv_lora_rank, nope=qk_nope_head_dim, rope=qk_rope_head_dim,
                   v=v_head_dim, theta=rope_theta)

    def _init(self, *, num_heads, rank, nope, rope, v, theta=10000.0):
        # late final int heads, rank, nope, rope, v;
        self.heads, self.rank, self.nope, self.rope, self.v = num_heads, rank, nope, rope, v
        self.theta = theta

    @property
    def qkWidth(self):
        return self.nope + self.rope

    def _rotations(self, length, *, offset=0, device=None):
        return precompute_freqs_cis(self.rope, offset + length, self.theta, device=device)[offset:]

    def _absorbedKey(self):
        w = self.wkv_b.weight.view(self.heads, self.nope + self.v, self.rank)
        return w[:, :self.nope].reshape(self.heads, self.rank, self.nope)  # (H, c, nope)

    def _absorbedValue(self):
        w = self.wkv_b.weight.view(self.heads, self.nope + self.v, self.rank)
        return w[:, self.nope:]  # (H, v, c)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        past = 0 if cache is None else cache[0].size(1)
        freqs = self._rotations(T, device=x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.heads, self.qkWidth)
        q_nope, q_pe = q.split([self.nope, self.rope], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs)
        latent, k_pe = self.wkv_a(x).split([self.rank, self.rope], dim=-1)
        latent = self.kv_norm(latent)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs).squeeze(2)
        if cache is not None:
            latent = torch.cat([cache[0], latent], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        S = latent.size(1)
        q_lat = torch.einsum("bthd,hcd->bthc", q_nope, self._absorbedKey())
        scores = torch.einsum("bthc,bsc->bths", q_lat, latent) + torch.einsum("bthr,bsr->bths", q_pe, k_pe)
        scores = scores / math.sqrt(self.qkWidth)
        allowed = torch.arange(S, device=x.device)[None, :] <= (past + torch.arange(T, device=x.device))[:, None]
        scores = scores.masked_fill(~allowed[:, None, :], float("-inf"))
        probs = scores.softmax(-1)
        ctx = torch.einsum("bths,bsc->bthc", probs, latent)
        out = torch.einsum("bthc,hvc->bthv", ctx, self._absorbedValue())
        return self.wo(out.flatten(2)), (latent, k_pe)
# bug-line: 71, 80
