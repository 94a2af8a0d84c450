# attnprep: decoder_layer
# expect: passed
"""Correct: a generic PreNormResidual(norm, fn) wrapper module used twice (timm / x-transformers habit), the
attention returns (out, weights) and the wrapper takes the first; dataclass config made in __init__."""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    dim: int
    heads: int
    kv_heads: int
    hidden: int
    theta: float
    eps: float


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        var = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * (var + self.eps).rsqrt()).type_as(x) * self.weight


class PreNormResidual(nn.Module):
    def __init__(self, norm, fn):
        super().__init__()
        self.norm, self.fn = norm, fn

    def forward(self, x, **kw):
        out = self.fn(self.norm(x), **kw)
        return x + (out[0] if isinstance(out, tuple) else out)


class SelfAttention(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.c, D = c, c.dim // c.heads
        self.q_proj = nn.Linear(c.dim, c.dim, bias=False)
        self.k_proj = nn.Linear(c.dim, c.kv_heads * D, bias=False)
        self.v_proj = nn.Linear(c.dim, c.kv_heads * D, bias=False)
        self.o_proj = nn.Linear(c.dim, c.dim, bias=False)

    def forward(self, x, attention_mask=None):
        c = self.c
        B, T, C = x.shape
        D = C // c.heads
        inv = 1.0 / c.theta ** (torch.arange(0, D, 2, device=x.device).float() / D)
        f = torch.outer(torch.arange(T, device=x.device).float(), inv)
        cos, sin = f.cos().repeat(1, 2), f.sin().repeat(1, 2)

        def rope(t):
            t1, t2 = t[..., :D // 2], t[..., D // 2:]
            return t * cos + torch.cat((-t2, t1), -1) * sin

        q = rope(self.q_proj(x).view(B, T, c.heads, D).transpose(1, 2))
        k = rope(self.k_proj(x).view(B, T, c.kv_heads, D).transpose(1, 2)).repeat_interleave(c.heads // c.kv_heads, 1)
        v = self.v_proj(x).view(B, T, c.kv_heads, D).transpose(1, 2).repeat_interleave(c.heads // c.kv_heads, 1)
        s = q @ k.transpose(-2, -1) / math.sqrt(D)
        bias = torch.zeros(T, T, device=x.device, dtype=s.dtype).masked_fill(
            torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        s = s + bias
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None], float("-inf"))
        w = s.softmax(-1)
        return self.o_proj((w @ v).transpose(1, 2).reshape(B, T, C)), w


class FeedForward(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.w1 = nn.Linear(c.dim, c.hidden, bias=False)
        self.w3 = nn.Linear(c.dim, c.hidden, bias=False)
        self.w2 = nn.Linear(c.hidden, c.dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        c = Config(d_model, num_heads, num_kv_heads, d_ff, rope_theta, eps)
        self.attn = PreNormResidual(RMSNorm(c.dim, c.eps), SelfAttention(c))
        self.ffn = PreNormResidual(RMSNorm(c.dim, c.eps), FeedForward(c))

    def forward(self, x, attention_mask=None):
        return self.ffn(self.attn(x, attention_mask=attention_mask))
