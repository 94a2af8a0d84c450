# attnprep: decoder_layer
# expect: passed
"""Correct, modded-nanogpt habits: CastedLinear, a Rotary module with cos / sin buffers precomputed
for a maximum length and sliced, the KV heads grouped by a view (B, G, H/G, T, D) of the queries
instead of any repeat, the causal and padding masks merged into one bool with F.pad-free arange
comparisons, torch.where with -inf, the feed-forward as a `mlp` method."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CastedLinear(nn.Linear):
    def __init__(self, in_features, out_features):
        super().__init__(in_features, out_features, bias=False)

    def forward(self, x):
        return F.linear(x, self.weight.type_as(x))


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        y = x.float()
        return (y * torch.rsqrt(y.square().mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


class Rotary(nn.Module):
    def __init__(self, dim, base, max_seq_len=512):
        super().__init__()
        inv_freq = base ** -(torch.arange(0, dim, 2, dtype=torch.float32) / dim)
        theta = torch.outer(torch.arange(max_seq_len, dtype=torch.float32), inv_freq)
        self.register_buffer("cos", theta.cos(), persistent=False)
        self.register_buffer("sin", theta.sin(), persistent=False)

    def forward(self, x):  # (..., T, D)
        T = x.size(-2)
        cos, sin = self.cos[:T].to(x.device), self.sin[:T].to(x.device)
        x1, x2 = x.float().chunk(2, dim=-1)
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).type_as(x)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.attn_norm = RMSNorm(d_model, eps)
        self.q_proj = CastedLinear(d_model, d_model)
        self.k_proj = CastedLinear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = CastedLinear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = CastedLinear(d_model, d_model)
        self.rotary = Rotary(self.head_dim, rope_theta)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.w1 = CastedLinear(d_model, d_ff)
        self.w3 = CastedLinear(d_model, d_ff)
        self.w2 = CastedLinear(d_ff, d_model)

    def attn(self, x, attention_mask):
        B, T, _ = x.shape
        H, G, D = self.num_heads, self.num_kv_heads, self.head_dim
        q = self.rotary(self.q_proj(x).view(B, T, G, H // G, D).permute(0, 2, 3, 1, 4))  # (B, G, R, T, D)
        k = self.rotary(self.k_proj(x).view(B, T, G, D).transpose(1, 2)).unsqueeze(2)  # (B, G, 1, T, D)
        v = self.v_proj(x).view(B, T, G, D).transpose(1, 2).unsqueeze(2)
        att = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, G, R, T, T)
        i = torch.arange(T, device=x.device)
        keep = i[None, :] <= i[:, None]
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, None, :]
        att = torch.where(keep, att, float("-inf")).softmax(dim=-1)
        y = (att @ v).reshape(B, H, T, D).transpose(1, 2).reshape(B, T, H * D)
        return self.o_proj(y)

    def mlp(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))

    def forward(self, x, attention_mask=None):
        x = x + self.attn(self.attn_norm(x), attention_mask)
        return x + self.mlp(self.ffn_norm(x))
