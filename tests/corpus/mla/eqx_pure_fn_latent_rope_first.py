# attnprep: mla
# expect: wrong_output
# diagnosis: mla_split_order
"""Equinox habits ported to torch: the layer is a thin nn.Module whose forward hands its weights to
pure functions (`_mla_apply(params, x, ...)`, jax.nn-style `softmax(x, axis=)`, `rms_norm(x, w)`),
with an `eqx.filter`-like dict of arrays pulled from named_parameters. The wkv_a output is unpacked
as [rope key; latent] instead of [latent; rope key]."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def softmax(x, axis=-1):
    return torch.softmax(x, dim=axis)


def rms_norm(x, weight, eps=1e-6):
    xf = x.float()
    return weight * (xf * torch.rsqrt(jnp_mean(xf * xf, axis=-1) + eps)).to(x.dtype)


def jnp_mean(x, axis):
    return x.mean(dim=axis, keepdim=True)


def rope_pairs(x, theta):
    # x: (B, T, H, r); DeepSeek's interleaved pairs at positions 0..T-1
    T, r = x.shape[1], x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, r, 2, device=x.device, dtype=torch.float32) / r)
    ang = torch.arange(T, device=x.device, dtype=torch.float32)[:, None] * inv  # (T, r/2)
    cos, sin = ang.cos()[None, :, None, :], ang.sin()[None, :, None, :]
    x1, x2 = x.float()[..., 0::2], x.float()[..., 1::2]
    y = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
    return y.flatten(-2).to(x.dtype)


def _mla_apply(p, x, mask, causal, cfg):
    H, c, dn, dr, dv, theta = cfg
    B, T, _ = x.shape
    q = F.linear(rms_norm(F.linear(x, p["wq_a"]), p["q_norm"]), p["wq_b"]).view(B, T, H, dn + dr)
    q_nope, q_pe = q[..., :dn], q[..., dn:]
    kv_a = F.linear(x, p["wkv_a"])
    k_pe, c_kv = kv_a[..., :dr], kv_a[..., dr:]
    kv = F.linear(rms_norm(c_kv, p["kv_norm"]), p["wkv_b"]).view(B, T, H, dn + dv)
    k_nope, v = kv[..., :dn], kv[..., dn:]
    q_pe = rope_pairs(q_pe, theta)
    k_pe = rope_pairs(k_pe[:, :, None, :], theta).expand(B, T, H, dr)
    qh = torch.cat([q_nope, q_pe], -1)
    kh = torch.cat([k_nope, k_pe], -1)
    logits = torch.einsum("bqhd,bkhd->bhqk", qh, kh) / math.sqrt(dn + dr)
    if mask is not None:
        logits = torch.where(mask[:, None, None, :], logits, torch.finfo(logits.dtype).min)
    if causal:
        tri = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        logits = torch.where(tri, logits, torch.finfo(logits.dtype).min)
    w = softmax(logits, axis=-1)
    out = torch.einsum("bhqk,bkhd->bqhd", w, v).reshape(B, T, H * dv)
    return F.linear(out, p["wo"])


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.cfg = (num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta)
        self.wq_a = nn.Parameter(torch.randn(q_lora_rank, d_model) * 0.02)
        self.q_norm = nn.Parameter(torch.ones(q_lora_rank))
        self.wq_b = nn.Parameter(torch.randn(num_heads * (qk_nope_head_dim + qk_rope_head_dim), q_lora_rank) * 0.02)
        self.wkv_a = nn.Parameter(torch.randn(kv_lora_rank + qk_rope_head_dim, d_model) * 0.02)
        self.kv_norm = nn.Parameter(torch.ones(kv_lora_rank))
        self.wkv_b = nn.Parameter(torch.randn(num_heads * (qk_nope_head_dim + v_head_dim), kv_lora_rank) * 0.02)
        self.wo = nn.Parameter(torch.randn(d_model, num_heads * v_head_dim) * 0.02)

    def forward(self, x, attention_mask=None, is_causal=False):
        params = {name: value for name, value in self.named_parameters()}
        return _mla_apply(params, x, attention_mask, is_causal, self.cfg)
# bug-line: 46
