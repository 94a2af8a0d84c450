# attnprep: decoder_layer
# expect: wrong_output
# diagnosis:
"""Whiteboard Llama layer: attention one head at a time (a Python loop over query heads, each a
(B, T, T) product against its KV head), RoPE by hand; the RMS statistic written as a sum over the
features, not their mean."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        ms = x.float().pow(2).sum(dim=-1, keepdim=True)
        return (x.float() * torch.rsqrt(ms + self.eps)).type_as(x) * self.weight


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.n_heads, self.n_kv, self.hd = num_heads, num_kv_heads, d_model // num_heads
        self.theta = rope_theta
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def rope(self, t, T):
        half = self.hd // 2
        inv = 1.0 / self.theta ** (torch.arange(0, self.hd, 2, device=t.device).float() / self.hd)
        ang = torch.arange(T, device=t.device).float()[:, None] * inv[None, :]
        cos, sin = torch.cat([ang, ang], -1).cos(), torch.cat([ang, ang], -1).sin()
        rot = torch.cat([-t[..., half:], t[..., :half]], -1)
        return t * cos + rot * sin

    def attention(self, x, attention_mask):
        B, T, C = x.shape
        q_all, k_all, v_all = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        per_kv = self.n_heads // self.n_kv
        heads = []
        for h in range(self.n_heads):
            g = h // per_kv
            q = self.rope(q_all[..., h * self.hd:(h + 1) * self.hd], T)
            k = self.rope(k_all[..., g * self.hd:(g + 1) * self.hd], T)
            v = v_all[..., g * self.hd:(g + 1) * self.hd]
            s = q @ k.transpose(1, 2) / math.sqrt(self.hd)
            keep = causal if attention_mask is None else causal & attention_mask[:, None, :]
            s = s.masked_fill(~keep, float("-inf"))
            heads.append(s.softmax(-1) @ v)
        return self.o_proj(torch.cat(heads, -1))

    def forward(self, x, attention_mask=None):
        h = x + self.attention(self.attn_norm(x), attention_mask)
        return h + self.w2(F.silu(self.w1(self.ffn_norm(h))) * self.w3(self.ffn_norm(h)))
# bug-line: 21
