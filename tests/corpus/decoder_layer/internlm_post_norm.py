# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_post_norm
"""InternLM decoder layer names (attention_norm, ffn_norm, feed_forward.w1/w2/w3, wq/wk/wv/wo), written
as the original Transformer's post-norm: the norm is applied to the sum after each residual."""

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
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = num_heads, num_kv_heads, d_model // num_heads
        self.theta = rope_theta
        self.wq = nn.Linear(d_model, d_model, bias=False)
        self.wk = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(d_model, d_model, bias=False)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.attention_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)

    def attention(self, x, attention_mask):
        B, T, C = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        inv = 1.0 / self.theta ** (torch.arange(0, self.head_dim, 2, device=x.device).float() / self.head_dim)
        f = torch.outer(torch.arange(T, device=x.device).float(), inv)
        emb = torch.cat([f, f], -1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        rep = self.n_heads // self.n_kv_heads
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        s = s.masked_fill(~keep, float("-inf"))
        return self.wo((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))

    def forward(self, x, attention_mask=None):
        h = self.attention_norm(x + self.attention(x, attention_mask))
        return self.ffn_norm(h + self.feed_forward(h))
# bug-line: 74
