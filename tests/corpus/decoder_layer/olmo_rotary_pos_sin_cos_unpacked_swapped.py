# attnprep: decoder_layer
# expect: wrong_output
"""AllenAI OLMo habits: a `RotaryEmbedding` module with `get_rotary_embedding(seq_len, device)`,
`apply_rotary_pos_emb(pos_sin, pos_cos, t)`, `att_proj` / `attn_out` / `ff_proj` / `ff_out` style
names kept to the contract's q/k/v/o and w1/w2/w3, the block as `x = x + self.attn(self.attn_norm(x))`,
and `repeat_interleave` for the grouped heads. The rotary module here returns (cos, sin), the order
the rest of this file was written for, but the helper that rotates q and k unpacks the pair in
OLMo's own (pos_sin, pos_cos) order."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, size, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(size))

    def forward(self, x):
        og_dtype = x.dtype
        x = x.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        return self.weight * x.to(og_dtype)


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, rope_theta):
        super().__init__()
        self.dim, self.rope_theta = dim, rope_theta

    def get_rotary_embedding(self, seq_len, device):
        inv_freq = 1.0 / (self.rope_theta ** (torch.arange(0, self.dim, 2, device=device, dtype=torch.float) / self.dim))
        seq = torch.arange(seq_len, device=device, dtype=torch.float)
        freqs = torch.einsum("i , j -> i j", seq, inv_freq)
        positions = torch.cat((freqs, freqs), dim=-1)
        return positions.cos()[None, None], positions.sin()[None, None]  # (1, 1, T, D) each

    def rotate_half(self, x):
        B, nh, T, hs = x.size()
        x = x.view(B, nh, T, 2, hs // 2)
        x1, x2 = x.unbind(dim=-2)
        return torch.cat((-x2, x1), dim=-1)

    def apply_rotary_pos_emb(self, sincos, t):
        pos_sin, pos_cos = sincos
        query_len, key_len = t.shape[-2], pos_sin.shape[-2]
        pos_sin = pos_sin[:, :, key_len - query_len : key_len, :]
        pos_cos = pos_cos[:, :, key_len - query_len : key_len, :]
        return ((t * pos_cos) + (self.rotate_half(t) * pos_sin)).to(t.dtype)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.n_heads, self.n_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.attn_norm = RMSNorm(d_model, eps)
        self.ff_norm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.attn_out = nn.Linear(d_model, d_model, bias=False)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.ff_out = nn.Linear(d_ff, d_model, bias=False)
        self.rotary_emb = RotaryEmbedding(self.head_dim, rope_theta)

    def attention(self, x, attention_mask):
        B, T, C = x.size()
        q = self.q_proj(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        sincos = self.rotary_emb.get_rotary_embedding(T, x.device)
        q = self.rotary_emb.apply_rotary_pos_emb(sincos, q)
        k = self.rotary_emb.apply_rotary_pos_emb(sincos, k)
        k = k.repeat_interleave(self.n_heads // self.n_kv_heads, dim=1)
        v = v.repeat_interleave(self.n_heads // self.n_kv_heads, dim=1)
        att = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        att = att.masked_fill(causal, float("-inf"))
        if attention_mask is not None:
            att = att.masked_fill(~attention_mask[:, None, None, :].bool(), float("-inf"))
        att = F.softmax(att, dim=-1)
        return self.attn_out((att @ v).transpose(1, 2).contiguous().view(B, T, C))

    def forward(self, x, attention_mask=None):
        x = x + self.attention(self.attn_norm(x), attention_mask)
        h = self.ff_norm(x)
        return x + self.ff_out(F.silu(self.w1(h)) * self.w3(h))
# bug-line: 50
