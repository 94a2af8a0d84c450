# attnprep: decoder_layer
# expect: mask_leak
# diagnosis: padding_mask_on_queries
"""OLMo-flavoured block (attn_norm / ff_norm, att_proj-style names, one torch.where per mask) whose
padding mask is laid along the query axis: padded rows are blanked, padded keys stay visible.
Only batches with padding show it."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        og = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x.to(og) * self.weight


def rope(x, theta):
    T, D = x.shape[-2], x.shape[-1]
    inv = theta ** (-torch.arange(0, D, 2, device=x.device, dtype=torch.float32) / D)
    ang = torch.arange(T, device=x.device, dtype=torch.float32)[:, None] * inv
    ang = torch.cat([ang, ang], -1)
    half = torch.cat([-x[..., D // 2:], x[..., : D // 2]], -1)
    return (x * ang.cos() + half * ang.sin()).to(x.dtype)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.h, self.g, self.dh = num_heads, num_kv_heads, d_model // num_heads
        self.theta = rope_theta
        self.attn_norm = RMSNorm(d_model, eps)
        self.ff_norm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.dh, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.dh, bias=False)
        self.attn_out = nn.Linear(d_model, d_model, bias=False)
        self.ff_gate = nn.Linear(d_model, d_ff, bias=False)
        self.ff_up = nn.Linear(d_model, d_ff, bias=False)
        self.ff_out = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x, attention_mask=None):
        B, T, C = x.shape
        h = self.attn_norm(x)
        q = rope(self.q_proj(h).view(B, T, self.h, self.dh).transpose(1, 2), self.theta)
        k = rope(self.k_proj(h).view(B, T, self.g, self.dh).transpose(1, 2), self.theta)
        v = self.v_proj(h).view(B, T, self.g, self.dh).transpose(1, 2)
        k = k.repeat_interleave(self.h // self.g, 1)
        v = v.repeat_interleave(self.h // self.g, 1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.dh)
        neg = torch.finfo(s.dtype).min
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        s = torch.where(causal, s, torch.full_like(s, neg))
        if attention_mask is not None:
            s = torch.where(attention_mask[:, None, :, None], s, torch.full_like(s, neg))
        y = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.attn_out(y)
        f = self.ff_norm(x)
        return x + self.ff_out(F.silu(self.ff_gate(f)) * self.ff_up(f))
# bug-line: 63
