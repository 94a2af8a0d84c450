# attnprep: kv_cache
# expect: passed
"""Weights as bare nn.Parameters used through F.linear (as a from-scratch interview answer does),
own names, heads folded into the batch for torch.bmm, a -1e9 additive mask from absolute positions."""
import math

import torch
import torch.nn.functional as F
from torch import nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        hd = d_model // num_heads
        self.nh, self.nkv, self.hd = num_heads, num_kv_heads, hd
        self.Wq = nn.Parameter(torch.randn(d_model, d_model) * 0.02)
        self.bq = nn.Parameter(torch.zeros(d_model))
        self.Wk = nn.Parameter(torch.randn(num_kv_heads * hd, d_model) * 0.02)
        self.bk = nn.Parameter(torch.zeros(num_kv_heads * hd))
        self.Wv = nn.Parameter(torch.randn(num_kv_heads * hd, d_model) * 0.02)
        self.bv = nn.Parameter(torch.zeros(num_kv_heads * hd))
        self.Wo = nn.Parameter(torch.randn(d_model, d_model) * 0.02)
        self.bo = nn.Parameter(torch.zeros(d_model))

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = F.linear(x, self.Wq, self.bq).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = F.linear(x, self.Wk, self.bk).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = F.linear(x, self.Wv, self.bv).view(B, T, self.nkv, self.hd).transpose(1, 2)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=-2)
            v = torch.cat([cache[1], v], dim=-2)
        S = k.size(-2)
        n_rep = self.nh // self.nkv
        kk = k[:, :, None].expand(B, self.nkv, n_rep, S, self.hd).reshape(B * self.nh, S, self.hd)
        vv = v[:, :, None].expand(B, self.nkv, n_rep, S, self.hd).reshape(B * self.nh, S, self.hd)
        qq = q.reshape(B * self.nh, T, self.hd)
        scores = torch.bmm(qq, kk.transpose(1, 2)) / math.sqrt(self.hd)
        q_pos = torch.arange(S - T, S, device=x.device)[:, None]
        k_pos = torch.arange(S, device=x.device)[None, :]
        scores = scores + (k_pos > q_pos).to(scores.dtype) * -1e9
        out = torch.bmm(scores.softmax(-1), vv).view(B, self.nh, T, self.hd)
        out = out.transpose(1, 2).reshape(B, T, C)
        return F.linear(out, self.Wo, self.bo), (k, v)
