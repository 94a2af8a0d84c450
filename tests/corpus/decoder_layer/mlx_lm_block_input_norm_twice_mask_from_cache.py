# attnprep: decoder_layer
# expect: mask_leak
# diagnosis: decoder_shared_norm + decoder_causal_missing
"""MLX-LM's llama.py ported to torch: TransformerBlock with input_layernorm / post_attention_layernorm,
an Attention module taking (x, mask, cache), the mask from create_attention_mask(h, cache) as mlx_lm
makes it (the "causal" string when there is more than one token), nn.RoPE(traditional=False) as a
small class; no cache is passed here."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dims, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dims))
        self.eps = eps

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class RoPE:
    def __init__(self, dims, traditional=False, base=10000.0):
        self.dims, self.traditional, self.base = dims, traditional, base

    def __call__(self, x, offset=0):
        L = x.shape[-2]
        freqs = self.base ** (-torch.arange(0, self.dims, 2, device=x.device).float() / self.dims)
        theta = torch.arange(offset, offset + L, device=x.device).float()[:, None] * freqs
        cos, sin = theta.cos(), theta.sin()
        x1, x2 = x[..., : self.dims // 2], x[..., self.dims // 2 :]
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).to(x.dtype)


def create_attention_mask(h, cache=None):
    T = h.shape[1]
    if T > 1 and cache is not None:
        return "causal"
    return None


class Attention(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, rope_theta):
        super().__init__()
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads
        self.head_dim = dim // n_heads
        self.scale = self.head_dim ** -0.5
        self.q_proj = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(n_heads * self.head_dim, dim, bias=False)
        self.rope = RoPE(self.head_dim, traditional=False, base=rope_theta)

    def forward(self, x, mask=None, padding=None):
        B, L, D = x.shape
        queries = self.q_proj(x).reshape(B, L, self.n_heads, -1).transpose(1, 2)
        keys = self.k_proj(x).reshape(B, L, self.n_kv_heads, -1).transpose(1, 2)
        values = self.v_proj(x).reshape(B, L, self.n_kv_heads, -1).transpose(1, 2)
        queries, keys = self.rope(queries), self.rope(keys)
        rep = self.n_heads // self.n_kv_heads
        keys, values = keys.repeat_interleave(rep, 1), values.repeat_interleave(rep, 1)
        scores = (queries * self.scale) @ keys.transpose(-1, -2)
        if mask == "causal":
            scores = scores.masked_fill(torch.ones(L, L, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        if padding is not None:
            scores = scores.masked_fill(~padding[:, None, None, :], float("-inf"))
        out = F.softmax(scores.float(), dim=-1).to(values.dtype) @ values
        return self.o_proj(out.transpose(1, 2).reshape(B, L, -1))


class MLP(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, dim, bias=False)
        self.up_proj = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.self_attn = Attention(d_model, num_heads, num_kv_heads, rope_theta)
        self.mlp = MLP(d_model, d_ff)
        self.input_layernorm = RMSNorm(d_model, eps=eps)
        self.post_attention_layernorm = RMSNorm(d_model, eps=eps)

    def forward(self, x, attention_mask=None, cache=None):
        mask = create_attention_mask(x, cache)
        r = self.self_attn(self.input_layernorm(x), mask, attention_mask)
        h = x + r
        r = self.mlp(self.input_layernorm(h))
        return h + r
# bug-line: 41, 98
