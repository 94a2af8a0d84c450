# attnprep: decoder_layer
# expect: passed
"""Qwen2-style names (input_layernorm, post_attention_layernorm, gate/up/down_proj), the causal and
padding masks folded into one bool tensor with torch.where, RoPE computed inline."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        dt = hidden_states.dtype
        h = hidden_states.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(dt)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.num_heads, self.num_key_value_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_theta = rope_theta
        self.input_layernorm = RMSNorm(d_model, eps)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def self_attn(self, x, attention_mask):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, -1, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, -1, self.head_dim).transpose(1, 2)
        inv_freq = 1.0 / (self.rope_theta ** (torch.arange(0, self.head_dim, 2, device=x.device).float() / self.head_dim))
        freqs = torch.outer(torch.arange(T, device=x.device).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        n_rep = self.num_heads // self.num_key_value_heads
        k = k.repeat_interleave(n_rep, dim=1)
        v = v.repeat_interleave(n_rep, dim=1)
        w = q @ k.transpose(2, 3) / math.sqrt(self.head_dim)
        allowed = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()[None, None]
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        w = torch.where(allowed, w, torch.finfo(w.dtype).min)
        out = (w.softmax(-1) @ v).transpose(1, 2).reshape(B, T, -1)
        return self.o_proj(out)

    def mlp(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    def forward(self, x, attention_mask=None):
        h = x + self.self_attn(self.input_layernorm(x), attention_mask)
        return h + self.mlp(self.post_attention_layernorm(h))
