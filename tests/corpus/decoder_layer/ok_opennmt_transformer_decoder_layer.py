# attnprep: decoder_layer
# expect: passed
"""Correct: OpenNMT-py's TransformerDecoderLayer shape with Llama's parts: `layer_norm_1` /
`layer_norm_2` (input_layernorm / post_attention_layernorm roles), `self_attn` with `shape()` /
`unshape()` closures and `query /= sqrt(dim_per_head)`, a `feed_forward` with HF gate_proj /
up_proj / down_proj names, `dec_mask = torch.gt(tgt_pad_mask + future_mask, 0)` as OpenNMT builds it,
the rotary sin / cos from a cached `rotary_embeddings` helper."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))

    def forward(self, x):
        y = x.float()
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
        return y.type_as(x) * self.weight


def rotary_embeddings(dim, maxlen, base, device):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, device=device).float() / dim))
    tmax = torch.arange(maxlen, device=device).float()
    rope = torch.outer(tmax, inv_freq)
    rope = torch.cat((rope, rope), dim=1)
    return rope.cos(), rope.sin()


def apply_rotary_emb(x, cos, sin):
    half = x.size(-1) // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.head_count, self.kv_count = num_heads, num_kv_heads
        self.dim_per_head = d_model // num_heads
        self.rope_theta = rope_theta
        self.layer_norm_1 = RMSNorm(d_model, eps)
        self.layer_norm_2 = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.dim_per_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.dim_per_head, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def self_attn(self, x, dec_mask):
        batch_size, tgt_len, _ = x.size()

        def shape(t, heads):
            return t.view(batch_size, -1, heads, self.dim_per_head).transpose(1, 2)

        def unshape(t):
            return t.transpose(1, 2).contiguous().view(batch_size, -1, self.head_count * self.dim_per_head)

        query, key, value = shape(self.q_proj(x), self.head_count), shape(self.k_proj(x), self.kv_count), shape(self.v_proj(x), self.kv_count)
        cos, sin = rotary_embeddings(self.dim_per_head, tgt_len, self.rope_theta, x.device)
        query, key = apply_rotary_emb(query, cos, sin), apply_rotary_emb(key, cos, sin)
        rep = self.head_count // self.kv_count
        key, value = key.repeat_interleave(rep, dim=1), value.repeat_interleave(rep, dim=1)
        query = query / math.sqrt(self.dim_per_head)
        scores = torch.matmul(query, key.transpose(2, 3))
        scores = scores.masked_fill(dec_mask, -1e18)
        attn = torch.softmax(scores, dim=-1)
        return self.o_proj(unshape(torch.matmul(attn, value)))

    def feed_forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    def forward(self, x, attention_mask=None):
        B, T, _ = x.shape
        future_mask = torch.ones(T, T, device=x.device, dtype=torch.uint8).triu_(1).view(1, 1, T, T)
        tgt_pad_mask = torch.zeros(B, 1, 1, T, device=x.device, dtype=torch.uint8)
        if attention_mask is not None:
            tgt_pad_mask = (~attention_mask).to(torch.uint8).view(B, 1, 1, T)
        dec_mask = torch.gt(tgt_pad_mask + future_mask, 0)
        h = x + self.self_attn(self.layer_norm_1(x), dec_mask)
        return h + self.feed_forward(self.layer_norm_2(h))
