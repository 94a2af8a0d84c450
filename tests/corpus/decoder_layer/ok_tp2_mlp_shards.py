# attnprep: decoder_layer
# expect: passed
"""Megatron habit: the MLP split over two simulated ranks: w1, w3 column shards (d_ff / 2 each), w2
row shards summed; attention unsharded with Llama names."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        y = x.float()
        return (y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


class ShardedMLP(nn.Module):
    def __init__(self, d, f, tp=2):
        super().__init__()
        assert f % tp == 0
        self.w1 = nn.ModuleList(nn.Linear(d, f // tp, bias=False) for _ in range(tp))
        self.w3 = nn.ModuleList(nn.Linear(d, f // tp, bias=False) for _ in range(tp))
        self.w2 = nn.ModuleList(nn.Linear(f // tp, d, bias=False) for _ in range(tp))

    def forward(self, x):
        return sum(w2(F.silu(w1(x)) * w3(x)) for w1, w2, w3 in zip(self.w1, self.w2, self.w3))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.H, self.KV, self.D, self.theta = num_heads, num_kv_heads, d_model // num_heads, rope_theta
        self.attn_norm, self.ffn_norm = RMSNorm(d_model, eps), RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.D, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.D, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.mlp = ShardedMLP(d_model, d_ff)

    def forward(self, x, attention_mask=None):
        B, T, C = x.shape
        h = self.attn_norm(x)
        inv = 1.0 / self.theta ** (torch.arange(0, self.D, 2, device=x.device).float() / self.D)
        f = torch.outer(torch.arange(T, device=x.device).float(), inv)
        cos, sin = torch.cat([f, f], -1).cos(), torch.cat([f, f], -1).sin()
        rh = lambda t: torch.cat([-t[..., self.D // 2:], t[..., : self.D // 2]], -1)
        q = self.q_proj(h).view(B, T, self.H, self.D).transpose(1, 2)
        k = self.k_proj(h).view(B, T, self.KV, self.D).transpose(1, 2)
        v = self.v_proj(h).view(B, T, self.KV, self.D).transpose(1, 2)
        q, k = q * cos + rh(q) * sin, k * cos + rh(k) * sin
        k = k.repeat_interleave(self.H // self.KV, 1)
        v = v.repeat_interleave(self.H // self.KV, 1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.D)
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        s = s.masked_fill(~keep, float("-inf"))
        x = x + self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))
        return x + self.mlp(self.ffn_norm(x))
