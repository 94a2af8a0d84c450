# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_shared_norm
"""The two residual branches bound once in __init__ with functools.partial (`self.branches`), a
generic `_residual(norm, fn, x)` method, HF Llama's names (input_layernorm, post_attention_layernorm,
gate_proj / up_proj / down_proj), rotate-half RoPE, GQA by repeat_interleave."""
import math
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        h = x.float()
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.n_heads, self.n_kv, self.head_dim = num_heads, num_kv_heads, d_model // num_heads
        self.theta = rope_theta
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model, bias=False)
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)
        self.input_layernorm = RMSNorm(d_model, eps)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.branches = (
            partial(self._residual, self.input_layernorm, self.attention),
            partial(self._residual, self.input_layernorm, self.mlp),
        )

    def _residual(self, norm, fn, x, **kw):
        return x + fn(norm(x), **kw)

    def attention(self, h, mask):
        B, T, _ = h.shape
        q = self.q_proj(h).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(h).view(B, T, self.n_kv, self.head_dim).transpose(1, 2)
        v = self.v_proj(h).view(B, T, self.n_kv, self.head_dim).transpose(1, 2)
        inv = 1.0 / self.theta ** (torch.arange(0, self.head_dim, 2, device=h.device).float() / self.head_dim)
        freqs = torch.outer(torch.arange(T, device=h.device).float(), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(h.dtype), emb.sin().to(h.dtype)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(self.n_heads // self.n_kv, dim=1)
        v = v.repeat_interleave(self.n_heads // self.n_kv, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(~mask, float("-inf"))
        out = scores.softmax(dim=-1) @ v
        return self.o_proj(out.transpose(1, 2).reshape(B, T, -1))

    def mlp(self, h):
        return self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))

    def forward(self, x, attention_mask=None):
        B, T, _ = x.shape
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()[None, None]
        if attention_mask is not None:
            mask = mask & attention_mask[:, None, None, :]
        attend, feed = self.branches
        x = attend(x, mask=mask)
        return feed(x)
# bug-line: 47
