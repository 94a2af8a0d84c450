# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_post_norm + gqa_heads_tiled
"""nanoGPT's Block with two slips: ln_1 / ln_2 after the adds (post-norm), and the KV heads tiled with repeat.
Two of the block's own mistakes together: named since the exercise pairs its own mistakes first
([grading] pairs_first)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, ndim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, n_kv_head, rope_theta, block_size=64):
        super().__init__()
        self.n_head, self.n_kv_head = n_head, n_kv_head
        self.hd = n_embd // n_head
        self.n_embd = n_embd
        self.c_attn = nn.Linear(n_embd, n_embd + 2 * n_kv_head * self.hd, bias=False)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=False)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))
        inv_freq = 1.0 / (rope_theta ** (torch.arange(0, self.hd, 2).float() / self.hd))
        t = torch.arange(block_size).float()
        freqs = torch.outer(t, inv_freq)
        self.register_buffer("cos", torch.cat([freqs, freqs], -1).cos())
        self.register_buffer("sin", torch.cat([freqs, freqs], -1).sin())

    def rope(self, x):
        T = x.size(2)
        x1, x2 = x[..., : self.hd // 2], x[..., self.hd // 2:]
        return x * self.cos[:T] + torch.cat([-x2, x1], dim=-1) * self.sin[:T]

    def forward(self, x, pad):
        B, T, C = x.size()
        kv = self.n_kv_head * self.hd
        q, k, v = self.c_attn(x).split([self.n_embd, kv, kv], dim=2)
        q = q.view(B, T, self.n_head, self.hd).transpose(1, 2)
        k = k.view(B, T, self.n_kv_head, self.hd).transpose(1, 2)
        v = v.view(B, T, self.n_kv_head, self.hd).transpose(1, 2)
        q, k = self.rope(q), self.rope(k)
        rep = self.n_head // self.n_kv_head
        k = k.repeat(1, rep, 1, 1)
        v = v.repeat(1, rep, 1, 1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        if pad is not None:
            att = att.masked_fill(~pad.view(B, 1, 1, T), float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, n_embd, hidden):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, hidden, bias=False)
        self.c_fc2 = nn.Linear(n_embd, hidden, bias=False)
        self.c_proj = nn.Linear(hidden, n_embd, bias=False)

    def forward(self, x):
        return self.c_proj(F.silu(self.c_fc(x)) * self.c_fc2(x))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.ln_1 = RMSNorm(d_model, eps)
        self.attn = CausalSelfAttention(d_model, num_heads, num_kv_heads, rope_theta)
        self.ln_2 = RMSNorm(d_model, eps)
        self.mlp = MLP(d_model, d_ff)

    def forward(self, x, attention_mask=None):
        x = self.ln_1(x + self.attn(x, attention_mask))
        x = self.ln_2(x + self.mlp(x))
        return x
# bug-line: 54, 86
