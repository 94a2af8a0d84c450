# attnprep: kv_cache
# expect: passed
"""Correct: positions kept in a frozen nn.Parameter (requires_grad=False) that no role takes, the causal test read from it; softmax divided after the product."""
import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, max_len=64):
        super().__init__()
        self.h, self.hk, self.d = num_heads, num_kv_heads, d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, num_kv_heads * self.d)
        self.wv = nn.Linear(d_model, num_kv_heads * self.d)
        self.wo = nn.Linear(d_model, d_model)
        # 位置编号存成冻结参数，跟着 .to() 走
        self.pos = nn.Parameter(torch.arange(max_len), requires_grad=False)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.wq(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.wk(x).view(B, T, self.hk, self.d).transpose(1, 2)
        v = self.wv(x).view(B, T, self.hk, self.d).transpose(1, 2)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        S = k.shape[2]
        g = self.h // self.hk
        kr, vr = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
        s = q @ kr.transpose(-1, -2) * self.d ** -0.5
        future = self.pos[:S][None, :] > self.pos[S - T:S][:, None]
        s = s.masked_fill(future, float("-inf"))
        e = (s - s.amax(-1, keepdim=True)).exp()
        o = (e @ vr) / e.sum(-1, keepdim=True)
        return self.wo(o.transpose(1, 2).reshape(B, T, C)), (k, v)
