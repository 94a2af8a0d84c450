# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_rope_wrong_tensors + decoder_residual_missing
"""x-transformers-era wrapper modules: PreNorm(dim, fn) and Residual(fn) composed into a list of
sub-layers built in __init__ (`self.layers = [Residual(PreNorm(...)), ...]`), forward a loop over
them; RoPE applied through a `rotary` helper that takes the tensors to rotate as a tuple."""
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
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


class PreNorm(nn.Module):
    def __init__(self, norm, fn):
        super().__init__()
        self.norm, self.fn = norm, fn

    def forward(self, x, **kw):
        return self.fn(self.norm(x), **kw)


class Residual(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x, **kw):
        return x + self.fn(x, **kw)


def rotary(tensors, theta):
    T, D = tensors[0].shape[-2], tensors[0].shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, D, 2, device=tensors[0].device).float() / D)
    f = torch.outer(torch.arange(T, device=tensors[0].device).float(), inv)
    cos, sin = torch.cat([f, f], -1).cos(), torch.cat([f, f], -1).sin()
    def rot(t):
        t1, t2 = t.chunk(2, dim=-1)
        return (t * cos + torch.cat([-t2, t1], -1) * sin).type_as(t)
    return tuple(rot(t) for t in tensors)


class Attention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, rope_theta):
        super().__init__()
        self.h, self.kv, self.d, self.theta = num_heads, num_kv_heads, d_model // num_heads, rope_theta
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, attention_mask=None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv, self.d).transpose(1, 2)
        (q,) = rotary((q,), self.theta)
        k = k.repeat_interleave(self.h // self.kv, 1)
        v = v.repeat_interleave(self.h // self.kv, 1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.d)
        allowed = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        s = s.masked_fill(~allowed, float("-inf"))
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x, **kw):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.attention = Attention(d_model, num_heads, num_kv_heads, rope_theta)
        self.ffn = FeedForward(d_model, d_ff)
        self.layers = nn.ModuleList([
            Residual(PreNorm(self.attn_norm, self.attention)),
            PreNorm(self.ffn_norm, self.ffn),
        ])

    def forward(self, x, attention_mask=None):
        for layer in self.layers:
            x = layer(x, attention_mask=attention_mask)
        return x
# bug-line: 68, 99
