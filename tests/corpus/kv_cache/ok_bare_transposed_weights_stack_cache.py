# attnprep: kv_cache
# expect: passed
"""Correct: bare (in, out) weights (x @ W + b), the cache kept internally as one stacked (2, ...) tensor
and unbound for the return."""
import math
import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.H, self.G, self.D = num_heads, num_kv_heads, d_model // num_heads
        kvd = num_kv_heads * self.D
        self.Wq = nn.Parameter(torch.randn(d_model, d_model) * 0.02)
        self.bq = nn.Parameter(torch.zeros(d_model))
        self.Wk = nn.Parameter(torch.randn(d_model, kvd) * 0.02)
        self.bk = nn.Parameter(torch.zeros(kvd))
        self.Wv = nn.Parameter(torch.randn(d_model, kvd) * 0.02)
        self.bv = nn.Parameter(torch.zeros(kvd))
        self.Wo = nn.Parameter(torch.randn(d_model, d_model) * 0.02)
        self.bo = nn.Parameter(torch.zeros(d_model))

    def forward(self, x, cache=None):
        B, T, C = x.shape
        H, G, D = self.H, self.G, self.D
        q = (x @ self.Wq + self.bq).view(B, T, H, D).transpose(1, 2)
        kv = torch.stack([(x @ self.Wk + self.bk), (x @ self.Wv + self.bv)]).view(2, B, T, G, D).transpose(2, 3)
        if cache is not None:
            kv = torch.cat([torch.stack(cache), kv], dim=3)
        k, v = kv.unbind(0)
        S = k.shape[2]
        kr = k.repeat_interleave(H // G, 1)
        vr = v.repeat_interleave(H // G, 1)
        s = q @ kr.transpose(-1, -2) / math.sqrt(D)
        rows = torch.arange(S - T, S, device=x.device).unsqueeze(1)
        s = s.masked_fill(torch.arange(S, device=x.device) > rows, float("-inf"))
        y = (s.softmax(-1) @ vr).transpose(1, 2).reshape(B, T, C)
        return y @ self.Wo + self.bo, (k, v)
