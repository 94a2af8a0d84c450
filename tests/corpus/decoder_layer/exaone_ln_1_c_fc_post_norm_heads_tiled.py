# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_post_norm + gqa_heads_tiled
"""EXAONE's naming (ExaoneBlock: ln_1 / attn.attention with out_proj / ln_2 / mlp with c_fc_0,
c_fc_1 and c_proj, layer_norm_epsilon); the norms applied after each residual sum, and the KV heads
tiled with repeat."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class ExaoneRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        dtype = hidden_states.dtype
        h = hidden_states.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(dtype)


class ExaoneSelfAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, num_kv_heads, rope_theta):
        super().__init__()
        self.num_heads, self.num_key_value_heads = num_heads, num_kv_heads
        self.head_dim = embed_dim // num_heads
        self.rope_theta = rope_theta
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.k_proj = nn.Linear(embed_dim, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(embed_dim, num_kv_heads * self.head_dim, bias=False)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=False)

    def rope(self, x):
        T, D = x.shape[-2], x.shape[-1]
        inv = 1.0 / self.rope_theta ** (torch.arange(0, D, 2, device=x.device).float() / D)
        ang = torch.arange(T, device=x.device).float()[:, None] * inv[None, :]
        ang = torch.cat([ang, ang], dim=-1)
        x1, x2 = x.chunk(2, dim=-1)
        return x * ang.cos() + torch.cat([-x2, x1], dim=-1) * ang.sin()

    def forward(self, hidden_states, attention_mask):
        B, T, C = hidden_states.shape
        q = self.q_proj(hidden_states).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(hidden_states).view(B, T, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(hidden_states).view(B, T, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        q, k = self.rope(q), self.rope(k)
        n_rep = self.num_heads // self.num_key_value_heads
        k = k.repeat(1, n_rep, 1, 1)
        v = v.repeat(1, n_rep, 1, 1)
        w = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        keep = torch.ones(T, T, dtype=torch.bool, device=w.device).tril()
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        w = w.masked_fill(~keep, float("-inf")).softmax(-1)
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, T, C))


class ExaoneAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, num_kv_heads, rope_theta):
        super().__init__()
        self.attention = ExaoneSelfAttention(embed_dim, num_heads, num_kv_heads, rope_theta)

    def forward(self, hidden_states, attention_mask):
        return self.attention(hidden_states, attention_mask)


class ExaoneGatedMLP(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.c_fc_0 = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.c_fc_1 = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.c_proj = nn.Linear(intermediate_size, hidden_size, bias=False)

    def forward(self, hidden_states):
        return self.c_proj(F.silu(self.c_fc_0(hidden_states)) * self.c_fc_1(hidden_states))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.ln_1 = ExaoneRMSNorm(d_model, eps=eps)
        self.attn = ExaoneAttention(d_model, num_heads, num_kv_heads, rope_theta)
        self.ln_2 = ExaoneRMSNorm(d_model, eps=eps)
        self.mlp = ExaoneGatedMLP(d_model, d_ff)

    def forward(self, x, attention_mask=None):
        residual = x
        hidden_states = self.ln_1(residual + self.attn(x, attention_mask))
        residual = hidden_states
        hidden_states = self.ln_2(residual + self.mlp(hidden_states))
        return hidden_states
# bug-line: 53, 54, 93, 95
