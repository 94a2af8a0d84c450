# attnprep: mla_decode
# expect: wrong_output
# diagnosis: cache_mask_not_offset
"""A small Latent helper class with operator overloads: `q @ latent` scores against the cached
c_kv, `probs @ latent` reads it back, `latent + new` appends tokens; one-token steps skip the mask."""
import math

import torch
import torch.nn as nn


class Latent:
    def __init__(self, c_kv, k_pe):
        self.c_kv, self.k_pe = c_kv, k_pe          # (B, S, c), (B, S, r)

    def __add__(self, new: "Latent") -> "Latent":
        return Latent(torch.cat([self.c_kv, new.c_kv], 1), torch.cat([self.k_pe, new.k_pe], 1))

    def __rmatmul__(self, q):                       # q = (q_c, q_pe): (B, T, H, c), (B, T, H, r)
        q_c, q_pe = q
        return torch.einsum("bthc,bsc->bhts", q_c, self.c_kv) + torch.einsum("bthr,bsr->bhts", q_pe, self.k_pe)

    def read(self, probs):                          # (B, H, T, S) -> (B, T, H, c)
        return torch.einsum("bhts,bsc->bthc", probs, self.c_kv)

    def __len__(self):
        return self.c_kv.shape[1]


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)


def rope(x, start, theta):
    T, r = x.shape[1], x.shape[-1]
    inv = theta ** (-torch.arange(0, r, 2, device=x.device, dtype=torch.float32) / r)
    ang = torch.arange(start, start + T, device=x.device, dtype=torch.float32)[:, None] * inv
    shape = (1, T) + (1,) * (x.dim() - 3) + (r // 2,)
    c, s = ang.cos().view(shape), ang.sin().view(shape)
    a, b = x.float()[..., 0::2], x.float()[..., 1::2]
    return torch.stack((a * c - b * s, a * s + b * c), -1).flatten(-2).type_as(x)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.C, self.N, self.R, self.V = num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim
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
        start = 0 if cache is None else cache[0].shape[1]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.H, self.N + self.R)
        q_nope, q_pe = q.split([self.N, self.R], -1)
        c_kv, k_pe = self.wkv_a(x).split([self.C, self.R], -1)
        new = Latent(self.kv_norm(c_kv), rope(k_pe, start, self.theta))
        latent = new if cache is None else Latent(*cache) + new
        w = self.wkv_b.weight.view(self.H, self.N + self.V, self.C)
        q_c = torch.einsum("bthn,hnc->bthc", q_nope, w[:, :self.N])
        scores = (q_c, rope(q_pe, start, self.theta)) @ latent
        scores = scores / math.sqrt(self.N + self.R)
        if T > 1:
            S = len(latent)
            scores = scores.masked_fill(~torch.ones(T, S, dtype=torch.bool, device=x.device).tril(), float("-inf"))
        o = latent.read(scores.softmax(-1))
        o = torch.einsum("bthc,hvc->bthv", o, w[:, self.N:])
        return self.wo(o.reshape(B, T, -1)), (latent.c_kv, latent.k_pe)
# bug-line: 79
