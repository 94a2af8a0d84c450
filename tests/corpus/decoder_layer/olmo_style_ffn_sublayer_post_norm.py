# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_post_norm
"""A block half-moved to the other layout: the attention sub-layer pre-norm, the feed-forward one normalised after its add."""
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
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.h, self.g, self.hd = num_heads, num_kv_heads, d_model // num_heads
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

    def _attn(self, x, attention_mask):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.g, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.g, self.hd).transpose(1, 2)
        inv = 1.0 / self.theta ** (torch.arange(0, self.hd, 2, device=x.device).float() / self.hd)
        ang = torch.outer(torch.arange(T, device=x.device).float(), inv)
        ang = torch.cat([ang, ang], dim=-1)
        q = q * ang.cos() + rotate_half(q) * ang.sin()
        k = k * ang.cos() + rotate_half(k) * ang.sin()
        k = k.repeat_interleave(self.h // self.g, dim=1)
        v = v.repeat_interleave(self.h // self.g, dim=1)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.hd)
        ok = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if attention_mask is not None:
            ok = ok & attention_mask[:, None, None, :]
        s = s.masked_fill(~ok, float("-inf"))
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))

    def forward(self, x, attention_mask=None):
        h = x + self._attn(self.attn_norm(x), attention_mask)
        return self.ffn_norm(h + self.w2(F.silu(self.w1(h)) * self.w3(h)))
# bug-line: 64
