# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_rope_wrong_tensors + gqa_heads_tiled
"""Equinox-style pure functions: `attention(params, x, mask, cfg)`, `feed_forward(params, x)`,
`rms_norm(w, x, eps)` take the weights explicitly (a dict from named_parameters), and the layer's
forward is one expression chaining them; `jnp.tile` habits for the KV heads. Two slips: RoPE is
applied to the queries only (the keys stay unrotated), and the KV heads are widened by tiling
(torch.tile over the head axis) instead of grouping."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rms_norm(w, x, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def rope(x, theta):
    T, D = x.shape[-2], x.shape[-1]
    inv = theta ** (-torch.arange(0, D, 2, device=x.device).float() / D)
    ang = torch.arange(T, device=x.device).float()[:, None] * inv[None]
    cos, sin = torch.cat([ang, ang], -1).cos(), torch.cat([ang, ang], -1).sin()
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], -1) * sin


def attention(p, x, mask, cfg):
    H, G, theta = cfg
    B, T, C = x.shape
    D = C // H
    q = F.linear(x, p["q_proj.weight"]).view(B, T, H, D).transpose(1, 2)
    k = F.linear(x, p["k_proj.weight"]).view(B, T, G, D).transpose(1, 2)
    v = F.linear(x, p["v_proj.weight"]).view(B, T, G, D).transpose(1, 2)
    q = rope(q, theta)
    k = torch.tile(k, (1, H // G, 1, 1))
    v = torch.tile(v, (1, H // G, 1, 1))
    s = q @ k.transpose(-1, -2) / math.sqrt(D)
    ok = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
    if mask is not None:
        ok = ok & mask[:, None, None, :]
    s = torch.where(ok, s, float("-inf"))
    return F.linear((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C), p["o_proj.weight"])


def feed_forward(p, x):
    return F.linear(F.silu(F.linear(x, p["w1.weight"])) * F.linear(x, p["w3.weight"]), p["w2.weight"])


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.cfg, self.eps = (num_heads, num_kv_heads, rope_theta), eps
        hd = d_model // num_heads
        self.attn_norm = nn.Module()
        self.attn_norm.weight = nn.Parameter(torch.ones(d_model))
        self.ffn_norm = nn.Module()
        self.ffn_norm.weight = nn.Parameter(torch.ones(d_model))
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * hd, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * hd, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x, attention_mask=None):
        p = dict(self.named_parameters())
        h = x + attention(p, rms_norm(p["attn_norm.weight"], x, self.eps), attention_mask, self.cfg)
        return h + feed_forward(p, rms_norm(p["ffn_norm.weight"], h, self.eps))
# bug-line: 38, 39, 40
