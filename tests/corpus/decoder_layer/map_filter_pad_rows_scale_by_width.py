# attnprep: decoder_layer
# expect: mask_leak
# diagnosis: padding_mask_on_queries + scale_d_model
"""map / filter pipelines: the three projections produced by `map(lambda lin: lin(h), ...)`, the
heads split by a `starmap` over (tensor, heads), the masks gathered by `filter(None, [...])` and
folded with functools.reduce(torch.logical_and). Two slips: the padding mask is laid on the query
rows ([:, None, :, None]), and the scores are divided by sqrt(d_model)."""

import functools
import itertools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


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
        self.h, self.g, self.d, self.theta = num_heads, num_kv_heads, d_model // num_heads, rope_theta
        self.attn_norm, self.ffn_norm = RMSNorm(d_model, eps), RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def _rope(self, x):
        T = x.shape[2]
        inv = 1.0 / self.theta ** (torch.arange(0, self.d, 2, device=x.device).float() / self.d)
        f = torch.outer(torch.arange(T, device=x.device).float(), inv)
        f = torch.cat([f, f], -1)
        return x * f.cos() + torch.cat([-x[..., self.d // 2:], x[..., : self.d // 2]], -1) * f.sin()

    def _attn(self, h, attention_mask):
        B, T, C = h.shape
        q, k, v = map(lambda lin: lin(h), (self.q_proj, self.k_proj, self.v_proj))
        q, k, v = itertools.starmap(lambda t, n: t.view(B, T, n, self.d).transpose(1, 2), ((q, self.h), (k, self.g), (v, self.g)))
        q, k = self._rope(q), self._rope(k)
        k, v = k.repeat_interleave(self.h // self.g, 1), v.repeat_interleave(self.h // self.g, 1)
        s = q @ k.transpose(-1, -2) / math.sqrt(C)
        masks = filter(lambda m: m is not None, [
            torch.ones(T, T, dtype=torch.bool, device=h.device).tril(),
            None if attention_mask is None else attention_mask[:, None, :, None],
        ])
        keep = functools.reduce(torch.logical_and, masks)
        s = s.masked_fill(~keep, float("-inf"))
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))

    def forward(self, x, attention_mask=None):
        h = x + self._attn(self.attn_norm(x), attention_mask)
        n = self.ffn_norm(h)
        return h + self.w2(F.silu(self.w1(n)) * self.w3(n))
# bug-line: 55, 58
