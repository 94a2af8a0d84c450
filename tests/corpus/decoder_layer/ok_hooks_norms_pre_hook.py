# attnprep: decoder_layer
# expect: passed
"""Correct: Llama layer where each sub-layer's input norm is applied by a forward pre-hook registered on
the sub-layer (attn / ffn modules receive the raw residual stream and the hook normalises it), the
residual adds in forward; GQA by expand + reshape; RoPE rotate-half with a cached cos/sin dict per T."""
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
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


class Attention(nn.Module):
    def __init__(self, d, h, kv, theta):
        super().__init__()
        self.h, self.kv, self.hd, self.theta = h, kv, d // h, theta
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, kv * self.hd, bias=False)
        self.v_proj = nn.Linear(d, kv * self.hd, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)
        self.mask = None

    def forward(self, x):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv, self.hd).transpose(1, 2)
        inv = 1.0 / self.theta ** (torch.arange(0, self.hd, 2, device=x.device).float() / self.hd)
        f = torch.arange(T, device=x.device).float()[:, None] * inv[None]
        cos, sin = torch.cat([f, f], -1).cos(), torch.cat([f, f], -1).sin()
        half = self.hd // 2
        rot = lambda t: torch.cat([-t[..., half:], t[..., :half]], -1)  # noqa: E731
        q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
        n = self.h // self.kv
        k = k[:, :, None].expand(B, self.kv, n, T, self.hd).reshape(B, self.h, T, self.hd)
        v = v[:, :, None].expand(B, self.kv, n, T, self.hd).reshape(B, self.h, T, self.hd)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.hd)
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if self.mask is not None:
            keep = keep & self.mask[:, None, None, :]
        s = s.masked_fill(~keep, float("-inf"))
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))


class FFN(nn.Module):
    def __init__(self, d, ff):
        super().__init__()
        self.w1 = nn.Linear(d, ff, bias=False)
        self.w2 = nn.Linear(ff, d, bias=False)
        self.w3 = nn.Linear(d, ff, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.attn = Attention(d_model, num_heads, num_kv_heads, rope_theta)
        self.ffn = FFN(d_model, d_ff)
        self.attn.register_forward_pre_hook(lambda mod, args: (self.attn_norm(args[0]),))
        self.ffn.register_forward_pre_hook(lambda mod, args: (self.ffn_norm(args[0]),))

    def forward(self, x, attention_mask=None):
        self.attn.mask = attention_mask
        h = x + self.attn(x)
        return h + self.ffn(h)
