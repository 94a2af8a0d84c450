# attnprep: decoder_layer
# expect: passed
"""gpt-oss's MLP layout (without its clamp): gate and up interleaved in one Linear(d, 2·d_ff),
gate = h[..., ::2], up = h[..., 1::2]; attention as Llama; RoPE rotate-half."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        t = x.float()
        return (t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.scale


def rope(x, theta):
    T, D = x.shape[-2], x.shape[-1]
    inv = theta ** (-torch.arange(0, D, 2, device=x.device, dtype=torch.float32) / D)
    ang = torch.arange(T, device=x.device, dtype=torch.float32)[:, None] * inv
    cos, sin = ang.cos().repeat(1, 2), ang.sin().repeat(1, 2)
    x1, x2 = x[..., : D // 2], x[..., D // 2:]
    return x * cos + torch.cat((-x2, x1), -1) * sin


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.H, self.KV, self.D, self.theta = num_heads, num_kv_heads, d_model // num_heads, rope_theta
        self.attn_norm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.D, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.D, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.mlp1 = nn.Linear(d_model, 2 * d_ff, bias=False)  # [g0, u0, g1, u1, ...]
        self.mlp2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x, attention_mask=None):
        B, T, C = x.shape
        h = self.attn_norm(x)
        q = rope(self.q_proj(h).view(B, T, self.H, self.D).transpose(1, 2), self.theta)
        k = rope(self.k_proj(h).view(B, T, self.KV, self.D).transpose(1, 2), self.theta)
        v = self.v_proj(h).view(B, T, self.KV, self.D).transpose(1, 2)
        k = k.repeat_interleave(self.H // self.KV, 1)
        v = v.repeat_interleave(self.H // self.KV, 1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.D)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        x = x + self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))
        gu = self.mlp1(self.ffn_norm(x))
        gate, up = gu[..., ::2], gu[..., 1::2]
        return x + self.mlp2(F.silu(gate) * up)
