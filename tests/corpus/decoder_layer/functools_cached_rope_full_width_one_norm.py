# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_rope_before_split + decoder_shared_norm
"""functools habits: `@functools.lru_cache` on the inverse frequencies by (dim, theta), a
`functools.partial` for the masked softmax, `cached_property` for the group count. Two slips: RoPE
rotates the projected q and k over their full width before the head split (the frequencies computed
for d_model instead of head_dim), and the feed-forward reuses attn_norm (ffn_norm is kept, unused)."""

import functools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


@functools.lru_cache(maxsize=None)
def inv_freq(dim, theta):
    return 1.0 / theta ** (torch.arange(0, dim, 2).float() / dim)


def rope(x, theta):
    T, D = x.shape[-2], x.shape[-1]
    ang = torch.arange(T, device=x.device).float()[:, None] * inv_freq(D, theta).to(x.device)
    emb = torch.cat([ang, ang], -1)
    return x * emb.cos() + torch.cat([-x[..., D // 2:], x[..., :D // 2]], -1) * emb.sin()


def masked_softmax(s, keep, dim):
    return s.masked_fill(~keep, float("-inf")).softmax(dim)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        f = x.float()
        return (f * torch.rsqrt(f.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.nh, self.nkv, self.hd, self.theta = num_heads, num_kv_heads, d_model // num_heads, rope_theta
        self.attn_norm, self.ffn_norm = RMSNorm(d_model, eps), RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    @functools.cached_property
    def groups(self):
        return self.nh // self.nkv

    def attend(self, x, mask):
        B, T, C = x.shape
        q = rope(self.q_proj(x), self.theta).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = rope(self.k_proj(x), self.theta).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        k, v = k.repeat_interleave(self.groups, 1), v.repeat_interleave(self.groups, 1)
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if mask is not None:
            keep = keep & mask[:, None, None, :]
        p = functools.partial(masked_softmax, keep=keep, dim=-1)(q @ k.transpose(-1, -2) / math.sqrt(self.hd))
        return self.o_proj((p @ v).transpose(1, 2).reshape(B, T, C))

    def forward(self, x, attention_mask=None):
        h = x + self.attend(self.attn_norm(x), attention_mask)
        return h + self.w2(F.silu(self.w1(self.attn_norm(h))) * self.w3(self.attn_norm(h)))
# bug-line: 63, 64, 75
