# attnprep: decoder_layer
# expect: passed
"""Correct: the layer composed of separately defined Attention / MLP / RMSNorm blocks held in an nn.ModuleDict,
RoPE tables in non-persistent buffers of 32 positions extended on demand, GQA via expand."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


class Rotary(nn.Module):
    def __init__(self, dim, theta, n=32):
        super().__init__()
        self.dim, self.theta = dim, theta
        self._build(n)

    def _build(self, n):
        inv = 1.0 / self.theta ** (torch.arange(0, self.dim, 2).float() / self.dim)
        f = torch.outer(torch.arange(n).float(), inv)
        emb = torch.cat([f, f], -1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, x):  # x (B, h, T, D)
        T = x.shape[-2]
        if T > self.cos.shape[0]:
            self._build(2 * T)
        c, s = self.cos[:T].to(x.device, x.dtype), self.sin[:T].to(x.device, x.dtype)
        x1, x2 = x.chunk(2, -1)
        return x * c + torch.cat([-x2, x1], -1) * s


class Attention(nn.Module):
    def __init__(self, d, H, G, theta):
        super().__init__()
        self.H, self.G, self.D = H, G, d // H
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, G * self.D, bias=False)
        self.v_proj = nn.Linear(d, G * self.D, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)
        self.rope = Rotary(self.D, theta)

    def forward(self, x, mask):
        B, T, C = x.shape
        q = self.rope(self.q_proj(x).view(B, T, self.H, self.D).transpose(1, 2))
        k = self.rope(self.k_proj(x).view(B, T, self.G, self.D).transpose(1, 2))
        v = self.v_proj(x).view(B, T, self.G, self.D).transpose(1, 2)
        r = self.H // self.G
        k = k[:, :, None].expand(B, self.G, r, T, self.D).reshape(B, self.H, T, self.D)
        v = v[:, :, None].expand(B, self.G, r, T, self.D).reshape(B, self.H, T, self.D)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.D)
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if mask is not None:
            keep = keep & mask[:, None, None, :]
        s = s.masked_fill(~keep, float("-inf"))
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.w1, self.w2, self.w3 = nn.Linear(d, f, bias=False), nn.Linear(f, d, bias=False), nn.Linear(d, f, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.blocks = nn.ModuleDict({
            "attn_norm": RMSNorm(d_model, eps),
            "attn": Attention(d_model, num_heads, num_kv_heads, rope_theta),
            "ffn_norm": RMSNorm(d_model, eps),
            "ffn": MLP(d_model, d_ff),
        })

    def forward(self, x, attention_mask=None):
        b = self.blocks
        h = x + b["attn"](b["attn_norm"](x), attention_mask)
        return h + b["ffn"](b["ffn_norm"](h))
