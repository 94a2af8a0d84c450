# attnprep: mla_decode
# expect: wrong_output
# diagnosis: cache_prepended + mla_absorb_transpose
"""The buffer-growing decoder with the new tokens written first and the cache after them, and the
value matrix applied as its own (C, Dv)-shaped reading of W_UV's rows (no transpose)."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        h = h * (h.pow(2).mean(-1, keepdim=True) + self.eps).rsqrt()
        return self.weight * h.to(x.dtype)


def rope_pairs(x, pos, theta):  # x (B, T, H, d), pos (T,): interleaved pairs, real arithmetic
    d = x.shape[-1]
    inv = theta ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float64) / d)
    ang = pos.to(torch.float64)[:, None] * inv  # (T, d/2)
    cos, sin = ang.cos()[None, :, None], ang.sin()[None, :, None]
    x1, x2 = x.double()[..., 0::2], x.double()[..., 1::2]
    out = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
    return out.flatten(-2).to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.C = num_heads, kv_lora_rank
        self.Dn, self.Dr, self.Dv = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def _grow(self, old, new):
        if old is None:
            return new
        B, P, W = old.shape
        buf = new.new_empty(B, P + new.shape[1], W)
        buf[:, :new.shape[1]] = new
        buf[:, new.shape[1]:] = old
        return buf

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, C, Dn, Dr, Dv = self.H, self.C, self.Dn, self.Dr, self.Dv
        past = 0 if cache is None else cache[0].shape[1]
        pos = torch.arange(past, past + T, device=x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, Dn + Dr)
        q_nope, q_pe = q[..., :Dn], rope_pairs(q[..., Dn:], pos, self.theta)
        lat = self.wkv_a(x)
        c_new = self.kv_norm(lat[..., :C])
        pe_new = rope_pairs(lat[..., None, C:], pos, self.theta)[:, :, 0]
        c_all = self._grow(None if cache is None else cache[0], c_new)
        pe_all = self._grow(None if cache is None else cache[1], pe_new)
        S = c_all.shape[1]
        w = self.wkv_b.weight.view(H, Dn + Dv, C)
        w_uk, w_uv = w[:, :Dn], w[:, Dn:]
        q_lat = torch.einsum("bthn,hnc->bthc", q_nope, w_uk)
        s = torch.einsum("bthc,bsc->bhts", q_lat, c_all) + torch.einsum("bthr,bsr->bhts", q_pe, pe_all)
        s = s / math.sqrt(Dn + Dr)
        see = torch.arange(S, device=x.device)[None, :] <= pos[:, None]
        s = s.masked_fill(~see, float("-inf"))
        o_lat = torch.einsum("bhts,bsc->bthc", F.softmax(s, dim=-1), c_all)
        o = torch.einsum("bthc,hcv->bthv", o_lat, w_uv.reshape(H, C, Dv))
        return self.wo(o.reshape(B, T, H * Dv)), (c_all, pe_all)
# bug-line: 54, 79
