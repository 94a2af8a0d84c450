# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_absorb_rows
"""Equinox / lax.scan habits: a pure `decode(params, carry, x)` returning `(carry, y)` like a scan
body, the carry being the cache; the module's forward only gathers the params and calls it. Norm
and RoPE are jax.nn-style free functions. wkv_b's weight is viewed (nope + dv, H, c), feature-major,
as if the rows were [all heads' key rows; all heads' value rows], when they are head by head."""

import math

import torch
import torch.nn as nn


def rms_norm(x, w, eps=1e-6):
    xf = x.float()
    return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def rope(x, start, theta):
    # x: (B, T, ..., r), interleaved pairs at positions start .. start + T - 1
    T, r = x.shape[1], x.shape[-1]
    inv = theta ** (-torch.arange(0, r, 2, dtype=torch.float32, device=x.device) / r)
    pos = torch.arange(start, start + T, dtype=torch.float32, device=x.device)
    ang = (pos[:, None] * inv).view((1, T) + (1,) * (x.dim() - 3) + (r // 2,))
    a, b = x.float()[..., 0::2], x.float()[..., 1::2]
    return torch.stack([a * ang.cos() - b * ang.sin(), a * ang.sin() + b * ang.cos()], -1).flatten(-2).to(x.dtype)


def decode(p, carry, x, cfg):
    H, c, dn, dr, dv, theta = cfg
    B, T, _ = x.shape
    past = 0 if carry is None else carry[0].shape[1]
    q = (rms_norm(x @ p["wq_a.weight"].T, p["q_norm.weight"]) @ p["wq_b.weight"].T).view(B, T, H, dn + dr)
    q_nope, q_pe = q[..., :dn], rope(q[..., dn:], past, theta)
    kv_a = x @ p["wkv_a.weight"].T
    lat = rms_norm(kv_a[..., :c], p["kv_norm.weight"])
    k_pe = rope(kv_a[..., c:], past, theta)
    if carry is not None:
        lat = torch.cat([carry[0], lat], dim=1)
        k_pe = torch.cat([carry[1], k_pe], dim=1)
    S = lat.shape[1]
    w = p["wkv_b.weight"].view(dn + dv, H, c)
    w_uk, w_uv = w[:dn], w[dn:]  # (dn, H, c), (dv, H, c)
    q_lat = torch.einsum("bthd,dhc->bthc", q_nope, w_uk)
    s = torch.einsum("bthc,bsc->bths", q_lat, lat) + torch.einsum("bthr,bsr->bths", q_pe, k_pe)
    s = s / math.sqrt(dn + dr)
    i = torch.arange(past, past + T, device=x.device)[:, None, None]
    j = torch.arange(S, device=x.device)[None, None, :]
    s = torch.where(j <= i, s, torch.full_like(s, float("-inf")))
    ctx = torch.einsum("bths,bsc->bthc", s.softmax(-1), lat)
    y = torch.einsum("bthc,dhc->bthd", ctx, w_uv).reshape(B, T, H * dv) @ p["wo.weight"].T
    return (lat, k_pe), y


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.cfg = (num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta)
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = nn.Module()
        self.q_norm.weight = nn.Parameter(torch.ones(q_lora_rank))
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = nn.Module()
        self.kv_norm.weight = nn.Parameter(torch.ones(kv_lora_rank))
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        carry, y = decode(dict(self.named_parameters()), cache, x, self.cfg)
        return y, carry
# bug-line: 43
