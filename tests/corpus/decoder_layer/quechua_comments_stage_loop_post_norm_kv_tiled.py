# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_post_norm + gqa_heads_tiled
"""Quechua comments; both sub-layers run from one loop over (norm, block) stages whose body adds
the residual and then normalises the sum (the original Transformer's post-norm), and the KV heads
widened with Tensor.repeat (tiled) instead of repeat_interleave."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.h, self.kvh = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.theta = rope_theta
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def _rope(self, t, T):
        # Muyuchiy: rotate_half
        inv = 1.0 / self.theta ** (torch.arange(0, self.hd, 2, device=t.device, dtype=torch.float32) / self.hd)
        ang = torch.arange(T, device=t.device, dtype=torch.float32)[:, None] * inv[None, :]
        cos, sin = torch.cat([ang, ang], -1).cos(), torch.cat([ang, ang], -1).sin()
        t1, t2 = t.chunk(2, dim=-1)
        return (t * cos + torch.cat([-t2, t1], -1) * sin).to(t.dtype)

    def attention(self, x, attention_mask):
        B, T, C = x.shape
        q = self._rope(self.q_proj(x).view(B, T, self.h, self.hd).transpose(1, 2), T)
        k = self._rope(self.k_proj(x).view(B, T, self.kvh, self.hd).transpose(1, 2), T)
        v = self.v_proj(x).view(B, T, self.kvh, self.hd).transpose(1, 2)
        # Huñu umakunata mirachiy
        k = k.repeat(1, self.h // self.kvh, 1, 1)
        v = v.repeat(1, self.h // self.kvh, 1, 1)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.hd)
        blocked = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        if attention_mask is not None:
            blocked = blocked | ~attention_mask[:, None, None, :]
        s = s.masked_fill(blocked, float("-inf"))
        y = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(y)

    def feed_forward(self, x, attention_mask):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))

    def forward(self, x, attention_mask=None):
        h = x
        # Sapa ruray: norma, chaymanta bloque
        for norm, block in ((self.attn_norm, self.attention), (self.ffn_norm, self.feed_forward)):
            h = norm(h + block(h, attention_mask))
        return h
# bug-line: 55, 56, 72
