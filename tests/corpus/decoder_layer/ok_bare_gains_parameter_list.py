# attnprep: decoder_layer
# expect: passed
"""Correct: everything bare: the two norm gains in an nn.ParameterList (vectors only, no matrix for them to be a bias of), the matrices named parameters through F.linear."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class DecoderLayer(nn.Module):
    """Everything bare: the two norm gains in a ParameterList, matrices as named parameters."""

    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.h, self.kv, self.hd = num_heads, num_kv_heads, d_model // num_heads
        self.theta, self.eps = rope_theta, eps
        init = lambda o, i: nn.Parameter(torch.randn(o, i) / math.sqrt(i))  # noqa: E731
        self.gains = nn.ParameterList([nn.Parameter(torch.ones(d_model)), nn.Parameter(torch.ones(d_model))])
        self.wq, self.wk = init(d_model, d_model), init(num_kv_heads * self.hd, d_model)
        self.wv, self.wo = init(num_kv_heads * self.hd, d_model), init(d_model, d_model)
        self.w1, self.w3, self.w2 = init(d_ff, d_model), init(d_ff, d_model), init(d_model, d_ff)

    def _rms(self, x, g):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * g

    def _rope(self, t):
        T, D = t.shape[-2], t.shape[-1]
        inv = 1.0 / self.theta ** (torch.arange(0, D, 2, device=t.device).float() / D)
        f = torch.outer(torch.arange(T, device=t.device).float(), inv)
        cos, sin = torch.cat([f, f], -1).cos(), torch.cat([f, f], -1).sin()
        t1, t2 = t.chunk(2, -1)
        return t * cos + torch.cat([-t2, t1], -1) * sin

    def forward(self, x, attention_mask=None):
        B, T, C = x.shape
        h = self._rms(x, self.gains[0])
        q = self._rope(F.linear(h, self.wq).view(B, T, self.h, self.hd).transpose(1, 2))
        k = self._rope(F.linear(h, self.wk).view(B, T, self.kv, self.hd).transpose(1, 2))
        v = F.linear(h, self.wv).view(B, T, self.kv, self.hd).transpose(1, 2)
        k, v = k.repeat_interleave(self.h // self.kv, 1), v.repeat_interleave(self.h // self.kv, 1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.hd)
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()[None, None]
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        a = s.masked_fill(~keep, float("-inf")).softmax(-1) @ v
        x = x + F.linear(a.transpose(1, 2).reshape(B, T, C), self.wo)
        m = self._rms(x, self.gains[1])
        return x + F.linear(F.silu(F.linear(m, self.w1)) * F.linear(m, self.w3), self.w2)
