# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_residual_missing
"""A contextlib.contextmanager `residual(x)` that yields a holder and adds the sub-layer's output
back on exit, as a `with residual(h) as r: r.out = ffn(norm(h))` block; the attention sub-layer
uses it, the feed-forward was written without it (`out = ffn(ffn_norm(h))`), so the second
residual is missing."""

import contextlib
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Holder:
    out = None


@contextlib.contextmanager
def residual(x):
    holder = Holder()
    yield holder
    holder.out = x + holder.out


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

    def rope(self, x):
        T = x.shape[-2]
        f = torch.outer(torch.arange(T, device=x.device).float(),
                        1.0 / self.theta ** (torch.arange(0, self.hd, 2, device=x.device).float() / self.hd))
        f = torch.cat([f, f], -1)
        return x * f.cos() + torch.cat([-x[..., self.hd // 2:], x[..., : self.hd // 2]], -1) * f.sin()

    def attend(self, x, mask):
        B, T, C = x.shape
        q = self.rope(self.q_proj(x).view(B, T, self.nh, self.hd).transpose(1, 2))
        k = self.rope(self.k_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2))
        v = self.v_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        r = self.nh // self.nkv
        s = q @ k.repeat_interleave(r, 1).transpose(-1, -2) / math.sqrt(self.hd)
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if mask is not None:
            keep = keep & mask[:, None, None, :]
        p = s.masked_fill(~keep, float("-inf")).softmax(-1)
        return self.o_proj((p @ v.repeat_interleave(r, 1)).transpose(1, 2).reshape(B, T, C))

    def forward(self, x, attention_mask=None):
        with residual(x) as r:
            r.out = self.attend(self.attn_norm(x), attention_mask)
        h = r.out
        out = self.w2(F.silu(self.w1(self.ffn_norm(h))) * self.w3(self.ffn_norm(h)))
        return out
# bug-line: 76
