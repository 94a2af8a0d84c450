# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_shared_norm
"""Yi / Hugging Face names (input_layernorm, post_attention_layernorm, self_attn.*, mlp.*), the attention
written with einsum; the MLP branch is normalised with input_layernorm again (post_attention_layernorm
is created but never used)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class YiRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(dtype)


class YiAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, theta):
        super().__init__()
        self.h, self.kvh, self.d, self.theta = num_heads, num_kv_heads, d_model // num_heads, theta
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, attention_mask=None):
        B, T, _ = x.shape
        g = self.h // self.kvh
        q = self.q_proj(x).view(B, T, self.kvh, g, self.d)
        k = self.k_proj(x).view(B, T, self.kvh, self.d)
        v = self.v_proj(x).view(B, T, self.kvh, self.d)
        inv = self.theta ** (-torch.arange(0, self.d, 2, device=x.device, dtype=torch.float32) / self.d)
        ang = torch.arange(T, device=x.device, dtype=torch.float32)[:, None] * inv
        cos = torch.cat([ang.cos(), ang.cos()], -1).to(x.dtype)
        sin = torch.cat([ang.sin(), ang.sin()], -1).to(x.dtype)

        def rot(t, c, s):
            a, b = t[..., : self.d // 2], t[..., self.d // 2 :]
            return t * c + torch.cat([-b, a], -1) * s

        q = rot(q, cos[None, :, None, None], sin[None, :, None, None])
        k = rot(k, cos[None, :, None], sin[None, :, None])
        s = torch.einsum("btkgd,bskd->bkgts", q, k) / math.sqrt(self.d)
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, None, :]
        s = s.masked_fill(~keep, float("-inf"))
        o = torch.einsum("bkgts,bskd->btkgd", s.softmax(-1), v)
        return self.o_proj(o.reshape(B, T, -1))


class YiMLP(nn.Module):
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
        self.self_attn = YiAttention(d_model, num_heads, num_kv_heads, rope_theta)
        self.mlp = YiMLP(d_model, d_ff)
        self.input_layernorm = YiRMSNorm(d_model, eps)
        self.post_attention_layernorm = YiRMSNorm(d_model, eps)

    def forward(self, x, attention_mask=None):
        residual = x
        hidden_states = self.self_attn(self.input_layernorm(x), attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.mlp(self.input_layernorm(hidden_states))
        return residual + hidden_states
# bug-line: 88
