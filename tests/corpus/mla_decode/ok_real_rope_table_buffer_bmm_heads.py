# attnprep: mla_decode
# expect: passed
"""Correct: a cos/sin table of 64 positions in a non-persistent buffer extended on demand, real interleaved rope,
W_UK / W_UV absorbed with torch.bmm over heads."""
import math
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.c, self.n, self.r, self.dv = num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)
        self._extend(64)

    def _extend(self, n):
        inv = 1.0 / self.theta ** (torch.arange(0, self.r, 2).float() / self.r)
        ang = torch.outer(torch.arange(n).float(), inv)
        self.register_buffer("cos_cached", ang.cos(), persistent=False)
        self.register_buffer("sin_cached", ang.sin(), persistent=False)

    def _rope(self, x, start):  # x (B, T, ..., r)
        T = x.shape[1]
        if start + T > self.cos_cached.shape[0]:
            self._extend(2 * (start + T))
        cos = self.cos_cached[start:start + T].to(x.device)
        sin = self.sin_cached[start:start + T].to(x.device)
        if x.dim() == 4:  # (B, T, H, r): broadcast over the heads
            cos, sin = cos[:, None], sin[:, None]
        xe, xo = x[..., 0::2].float(), x[..., 1::2].float()
        return torch.stack([xe * cos - xo * sin, xe * sin + xo * cos], -1).flatten(-2).type_as(x)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, c, n, r, dv = self.H, self.c, self.n, self.r, self.dv
        past = 0 if cache is None else cache[0].size(1)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, n + r)
        q_nope, q_pe = q[..., :n], self._rope(q[..., n:], past)
        a = self.wkv_a(x)
        ckv = self.kv_norm(a[..., :c])
        kpe = self._rope(a[..., c:], past)
        if cache is not None:
            ckv = torch.cat([cache[0], ckv], 1)
            kpe = torch.cat([cache[1], kpe], 1)
        S = ckv.shape[1]
        Wb = self.wkv_b.weight.view(H, n + dv, c)
        W_UK, W_UV = Wb[:, :n], Wb[:, n:]                         # (H, n, c), (H, dv, c)
        qh = q_nope.permute(2, 0, 1, 3).reshape(H, B * T, n)
        q_lat = torch.bmm(qh, W_UK).view(H, B, T, c).permute(1, 2, 0, 3)   # (B, T, H, c)
        s = torch.einsum("bthc,bsc->bths", q_lat, ckv) + torch.einsum("bthr,bsr->bths", q_pe, kpe)
        s = s / math.sqrt(n + r)
        i = torch.arange(past, past + T, device=x.device)[:, None, None]
        j = torch.arange(S, device=x.device)[None, None, :]
        s = s.masked_fill(j > i, float("-inf"))
        p = s.softmax(-1)
        lat = torch.einsum("bths,bsc->bthc", p, ckv)                # (B, T, H, c)
        o = torch.bmm(lat.permute(2, 0, 1, 3).reshape(H, B * T, c), W_UV.transpose(1, 2))  # (H, B*T, dv)
        o = o.view(H, B, T, dv).permute(1, 2, 0, 3).reshape(B, T, H * dv)
        return self.wo(o), (ckv, kpe)
