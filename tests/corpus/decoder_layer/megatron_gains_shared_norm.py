# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_shared_norm
"""Megatron-core layout with the norms' gains kept broadcast-ready as (1, 1, hidden); the feed-forward
is fed through input_layernorm again, pre_mlp_layernorm is built and never used."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(1, 1, hidden))

    def forward(self, x):
        h = x.float()
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rope_sbhd(t, theta):  # t: [s, b, np, hn], rotate-half
    s, hn = t.shape[0], t.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, hn, 2, device=t.device).float() / hn)
    freqs = torch.outer(torch.arange(s, device=t.device).float(), inv)
    emb = torch.cat((freqs, freqs), -1)[:, None, None, :]  # [s, 1, 1, hn]
    t1, t2 = torch.chunk(t, 2, dim=-1)
    return t * emb.cos() + torch.cat((-t2, t1), -1) * emb.sin()


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.np, self.ng, self.hn = num_heads, num_kv_heads, d_model // num_heads
        self.theta = rope_theta
        self.input_layernorm = RMSNorm(d_model, eps)
        self.linear_qkv = nn.Linear(d_model, (num_heads + 2 * num_kv_heads) * self.hn, bias=False)
        self.linear_proj = nn.Linear(d_model, d_model, bias=False)
        self.pre_mlp_layernorm = RMSNorm(d_model, eps)
        self.linear_fc1 = nn.Linear(d_model, 2 * d_ff, bias=False)
        self.linear_fc2 = nn.Linear(d_ff, d_model, bias=False)

    def self_attention(self, h, attention_mask):
        s, b, _ = h.shape
        per = self.np // self.ng
        mixed = self.linear_qkv(h).view(s, b, self.ng, (per + 2) * self.hn)
        q, k, v = torch.split(mixed, [per * self.hn, self.hn, self.hn], dim=3)
        q = q.reshape(s, b, self.np, self.hn)
        q, k = rope_sbhd(q, self.theta), rope_sbhd(k, self.theta)
        k = k.repeat_interleave(per, dim=2)
        v = v.repeat_interleave(per, dim=2)
        q, k, v = (t.permute(1, 2, 0, 3) for t in (q, k, v))  # [b, np, s, hn]
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.hn)
        masked = torch.ones(s, s, dtype=torch.bool, device=h.device).triu(1)[None, None]
        if attention_mask is not None:
            masked = masked | ~attention_mask[:, None, None, :]
        scores = scores.masked_fill(masked, float("-inf"))
        ctx = (scores.softmax(-1) @ v).permute(2, 0, 1, 3).reshape(s, b, -1)
        return self.linear_proj(ctx)

    def mlp(self, h):
        gate, up = torch.chunk(self.linear_fc1(h), 2, dim=-1)
        return self.linear_fc2(F.silu(gate) * up)

    def forward(self, x, attention_mask=None):
        hidden = x.transpose(0, 1)  # [s, b, h]
        hidden = hidden + self.self_attention(self.input_layernorm(hidden), attention_mask)
        hidden = hidden + self.mlp(self.input_layernorm(hidden))
        return hidden.transpose(0, 1)
# bug-line: 71
