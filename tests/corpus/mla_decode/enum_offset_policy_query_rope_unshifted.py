# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_rope_position_zero
"""An enum.Enum offset policy (`Offset.ABSOLUTE` / `Offset.LOCAL`) passed to the rotary helper per
call site, the absorbed decode written with torch.bmm over heads folded into the batch. The key's
k_pe is rotated with Offset.ABSOLUTE (T_past + t); the query's q_pe was given Offset.LOCAL, so the
new queries are rotated from position 0 on every call."""

import enum
import math

import torch
import torch.nn as nn


class Offset(enum.Enum):
    ABSOLUTE = "absolute"
    LOCAL = "local"


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


def rotary(x, past, theta, policy):
    T, r = x.shape[1], x.shape[-1]
    start = past if policy is Offset.ABSOLUTE else 0
    inv = theta ** (-torch.arange(0, r, 2, dtype=torch.float32, device=x.device) / r)
    ang = torch.arange(start, start + T, dtype=torch.float32, device=x.device)[:, None] * inv
    ang = ang.view((1, T) + (1,) * (x.dim() - 3) + (r // 2,))
    z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], r // 2, 2).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(ang), ang)).flatten(-2).to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.c, self.dn, self.dr, self.dv = num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, c, dn, dr, dv = self.H, self.c, self.dn, self.dr, self.dv
        past = 0 if cache is None else cache[0].shape[1]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, dn + dr)
        q_pe = rotary(q[..., dn:], past, self.theta, Offset.LOCAL)
        lat, k_pe = self.wkv_a(x).split([c, dr], -1)
        lat, k_pe = self.kv_norm(lat), rotary(k_pe, past, self.theta, Offset.ABSOLUTE)
        if cache is not None:
            lat, k_pe = torch.cat([cache[0], lat], 1), torch.cat([cache[1], k_pe], 1)
        S = lat.shape[1]
        w = self.wkv_b.weight.view(H, dn + dv, c)
        q_lat = torch.bmm(q[..., :dn].transpose(0, 2).reshape(H, T * B, dn), w[:, :dn]).view(H, T, B, c).permute(2, 1, 0, 3)
        s = torch.einsum("bthc,bsc->bths", q_lat, lat) + torch.einsum("bthr,bsr->bths", q_pe, k_pe)
        s = s * (1.0 / math.sqrt(dn + dr))
        keep = torch.arange(S, device=x.device)[None, :] <= (torch.arange(T, device=x.device) + past)[:, None]
        p = s.masked_fill(~keep[:, None, :], float("-inf")).softmax(-1)
        ctx = torch.einsum("bths,bsc->bthc", p, lat)
        out = torch.einsum("bthc,hdc->bthd", ctx, w[:, dn:]).reshape(B, T, H * dv)
        return self.wo(out), (lat, k_pe)
# bug-line: 61
