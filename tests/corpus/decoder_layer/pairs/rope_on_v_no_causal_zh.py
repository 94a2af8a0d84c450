# attnprep: decoder_layer
# expect: mask_leak
# diagnosis: decoder_rope_wrong_tensors + decoder_causal_missing
"""面试手写版的两个错：v 也做了 RoPE，而且忘了因果掩码（只有 padding 掩码）。"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.h, self.g = num_heads, num_kv_heads
        self.d = d_model // num_heads
        self.theta, self.eps = rope_theta, eps
        # 两个 RMSNorm，各有各的权重
        self.norm_a = nn.Parameter(torch.ones(d_model))
        self.norm_b = nn.Parameter(torch.ones(d_model))
        self.to_q = nn.Linear(d_model, d_model, bias=False)
        self.to_k = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.to_v = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.to_out = nn.Linear(d_model, d_model, bias=False)
        self.gate = nn.Linear(d_model, d_ff, bias=False)
        self.up = nn.Linear(d_model, d_ff, bias=False)
        self.down = nn.Linear(d_ff, d_model, bias=False)

    def rms(self, x, w):
        # 均方根归一化：不减均值
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * w

    def rope(self, x):
        # x: (B, heads, T, D)，旋转一半（rotate-half）
        T, D = x.shape[-2], x.shape[-1]
        inv = self.theta ** (-torch.arange(0, D, 2, device=x.device).float() / D)
        ang = torch.einsum("t,f->tf", torch.arange(T, device=x.device).float(), inv)
        ang = torch.cat([ang, ang], -1)
        x1, x2 = x.chunk(2, -1)
        return x * ang.cos() + torch.cat([-x2, x1], -1) * ang.sin()

    def forward(self, x, attention_mask=None):
        B, T, C = x.shape
        H, G, D = self.h, self.g, self.d
        r = H // G
        y = self.rms(x, self.norm_a)
        q = self.rope(self.to_q(y).view(B, T, H, D).transpose(1, 2))  # (B, H, T, D)
        k = self.rope(self.to_k(y).view(B, T, G, D).transpose(1, 2))  # (B, G, T, D)
        v = self.rope(self.to_v(y).view(B, T, G, D).transpose(1, 2))
        q = q.reshape(B, G, r, T, D)  # 连续的 r 个 query 头共用一个 KV 头
        s = torch.einsum("bgrid,bgjd->bgrij", q, k) / math.sqrt(D)
        ok = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            ok = ok & attention_mask[:, None, None, None, :]
        s = s.masked_fill(~ok, -1e9)  # 大负数也行
        p = s.softmax(-1)
        o = torch.einsum("bgrij,bgjd->bgrid", p, v).reshape(B, H, T, D)
        h = x + self.to_out(o.transpose(1, 2).reshape(B, T, C))
        z = self.rms(h, self.norm_b)
        return h + self.down(F.silu(self.gate(z)) * self.up(z))
