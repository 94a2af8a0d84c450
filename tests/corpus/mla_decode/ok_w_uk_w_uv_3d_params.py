# attnprep: mla_decode
# expect: passed
"""Correct: the absorbed decode with wkv_b kept as two 3-d parameters, W_UK (H, nope, c) and W_UV
(H, dv, c) (FlashMLA-demo style: the per-head matrices are what the kernels take), the rest as
DeepSeek's; RoPE in real arithmetic on interleaved pairs at absolute positions."""
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
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


def rope(x, pos, theta):  # x (B, T, ..., r)
    r = x.shape[-1]
    inv = theta ** (-torch.arange(0, r, 2, device=x.device, dtype=torch.float64) / r)
    ang = pos.double()[:, None] * inv
    shape = (1, ang.shape[0]) + (1,) * (x.dim() - 3) + (ang.shape[1],)
    c, s = ang.cos().view(shape), ang.sin().view(shape)
    a, b = x[..., 0::2].double(), x[..., 1::2].double()
    return torch.stack([a * c - b * s, a * s + b * c], -1).flatten(-2).to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.nope, self.rope, self.dv, self.c = num_heads, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, kv_lora_rank
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.W_UK = nn.Parameter(torch.randn(num_heads, qk_nope_head_dim, kv_lora_rank) / math.sqrt(kv_lora_rank))
        self.W_UV = nn.Parameter(torch.randn(num_heads, v_head_dim, kv_lora_rank) / math.sqrt(kv_lora_rank))
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        past = 0 if cache is None else cache[0].shape[1]
        pos = torch.arange(past, past + T, device=x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.H, self.nope + self.rope)
        q_nope, q_pe = q.split([self.nope, self.rope], -1)
        q_pe = rope(q_pe, pos, self.theta)
        lat, k_pe = self.wkv_a(x).split([self.c, self.rope], -1)
        lat, k_pe = self.kv_norm(lat), rope(k_pe, pos, self.theta)
        if cache is not None:
            lat, k_pe = torch.cat([cache[0], lat], 1), torch.cat([cache[1], k_pe], 1)
        q_lat = torch.einsum("bthd,hdc->bthc", q_nope, self.W_UK)
        s = (torch.einsum("bthc,bsc->bhts", q_lat, lat) + torch.einsum("bthr,bsr->bhts", q_pe, k_pe))
        s = s / math.sqrt(self.nope + self.rope)
        S = past + T
        s = s.masked_fill(torch.arange(S, device=x.device)[None, :] > pos[:, None], float("-inf"))
        o = torch.einsum("bhts,bsc->bthc", s.softmax(-1), lat)
        o = torch.einsum("bthc,hdc->bthd", o, self.W_UV)
        return self.wo(o.reshape(B, T, -1)), (lat, k_pe)
