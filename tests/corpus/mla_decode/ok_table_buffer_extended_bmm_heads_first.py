# attnprep: mla_decode
# expect: passed
# Absorbed decode with the rotation table a non-persistent buffer grown on demand (positions sliced at
# T_past), W_UK / W_UV cut from wkv_b.weight by unflatten, heads first and torch.matmul.
import math
import torch
import torch.nn as nn


def table(dim, n, theta, device=None):
    inv = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    ang = torch.outer(torch.arange(n, dtype=torch.float64, device=device), inv)
    return torch.polar(torch.ones_like(ang), ang)


def rotate(x, f):  # x (B, T, H, r), f (T, r/2)
    xc = torch.view_as_complex(x.double().unflatten(-1, (-1, 2)).contiguous())
    return torch.view_as_real(xc * f[None, :, None, :]).flatten(-2).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.c = num_heads, kv_lora_rank
        self.nope, self.rope, self.dv = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)
        self.register_buffer("freqs", table(qk_rope_head_dim, 16, rope_theta), persistent=False)

    def _freqs(self, start, stop, device):
        if stop > self.freqs.shape[0] or self.freqs.device != device:
            self.freqs = table(self.rope, max(stop, 2 * self.freqs.shape[0]), self.theta, device)
        return self.freqs[start:stop]

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, c, nope, rope, dv = self.H, self.c, self.nope, self.rope, self.dv
        past = 0 if cache is None else cache[0].shape[1]
        f = self._freqs(past, past + T, x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, nope + rope)
        q_nope, q_pe = q.split([nope, rope], -1)
        q_pe = rotate(q_pe, f)
        c_new, kpe_new = self.wkv_a(x).split([c, rope], -1)
        c_new = self.kv_norm(c_new)
        kpe_new = rotate(kpe_new[:, :, None], f)[:, :, 0]
        c_kv = c_new if cache is None else torch.cat([cache[0], c_new], 1)
        k_pe = kpe_new if cache is None else torch.cat([cache[1], kpe_new], 1)
        S = c_kv.shape[1]
        w = self.wkv_b.weight.unflatten(0, (H, nope + dv))  # (H, nope+dv, c)
        w_uk, w_uv = w[:, :nope], w[:, nope:]  # (H, nope, c), (H, dv, c)
        qh = q_nope.transpose(1, 2)  # (B, H, T, nope)
        q_lat = torch.matmul(qh, w_uk)  # (B, H, T, c)
        s = torch.matmul(q_lat, c_kv.transpose(1, 2)[:, None]) + torch.matmul(q_pe.transpose(1, 2), k_pe.transpose(1, 2)[:, None])
        s = s / math.sqrt(nope + rope)
        s = s.masked_fill(~torch.ones(T, S, dtype=torch.bool, device=x.device).tril(past), float("-inf"))
        p = s.softmax(-1)  # (B, H, T, S)
        lat = torch.matmul(p, c_kv[:, None])  # (B, H, T, c)
        o = torch.matmul(lat, w_uv.transpose(1, 2))  # (B, H, T, dv)
        return self.wo(o.transpose(1, 2).reshape(B, T, H * dv)), (c_kv, k_pe)
