# attnprep: decoder_layer
# expect: passed
"""Llama-4's text decoder naming (input_layernorm / post_attention_layernorm, self_attn and
feed_forward submodules holding q_proj .. o_proj and gate_proj / up_proj / down_proj), no chunked
attention or QK-norm (the contract's plain Llama layer)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Llama4TextRMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


class Llama4TextAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, rope_theta):
        super().__init__()
        self.num_heads, self.num_key_value_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_theta = rope_theta
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)

    def forward(self, hidden_states, attention_mask):
        B, T, C = hidden_states.shape
        shape = (B, T, -1, self.head_dim)
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        inv_freq = 1.0 / self.rope_theta ** (torch.arange(0, self.head_dim, 2, device=q.device).float() / self.head_dim)
        freqs = torch.arange(T, device=q.device).float()[:, None] * inv_freq[None, :]
        cos, sin = torch.cat((freqs, freqs), -1).cos(), torch.cat((freqs, freqs), -1).sin()

        def rot(t):
            a, b = t[..., : self.head_dim // 2], t[..., self.head_dim // 2 :]
            return t * cos + torch.cat((-b, a), -1) * sin

        q, k = rot(q), rot(k)
        groups = self.num_heads // self.num_key_value_heads
        k = k[:, :, None].expand(B, self.num_key_value_heads, groups, T, self.head_dim).reshape(B, self.num_heads, T, self.head_dim)
        v = v[:, :, None].expand(B, self.num_key_value_heads, groups, T, self.head_dim).reshape(B, self.num_heads, T, self.head_dim)
        w = q @ k.transpose(2, 3) / math.sqrt(self.head_dim)
        keep = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        w = w.masked_fill(~keep, float("-inf")).softmax(-1)
        return self.o_proj((w @ v).transpose(1, 2).reshape(B, T, C))


class Llama4TextMLP(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.input_layernorm = Llama4TextRMSNorm(d_model, eps)
        self.self_attn = Llama4TextAttention(d_model, num_heads, num_kv_heads, rope_theta)
        self.post_attention_layernorm = Llama4TextRMSNorm(d_model, eps)
        self.feed_forward = Llama4TextMLP(d_model, d_ff)

    def forward(self, x, attention_mask=None):
        residual = x
        hidden_states = self.self_attn(self.input_layernorm(x), attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.feed_forward(self.post_attention_layernorm(hidden_states))
        return residual + hidden_states
