# attnprep: mla_decode
# expect: wrong_output
# diagnosis: cache_mask_not_offset
"""A sympy-like derivation written as a list of steps: `STEPS = [("q_lat", fn), ("scores", fn), ...]`,
each a function of a namespace dict `ns` that it extends, run in order by `derive()` (as one would
print a sympy derivation line by line). The absorbed decode path. The causal mask of the new tokens
is built as tril(ones(T, S)) without the cached offset: a single new token sees everything either
way, but a chunk after a cache loses most of the prefix."""

import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        f = x.float()
        return self.weight * (f * (f.pow(2).mean(-1, keepdim=True) + self.eps).rsqrt()).to(x.dtype)


def rot(x, start, theta):
    T, r = x.shape[1], x.shape[-1]
    inv = theta ** (-torch.arange(0, r, 2, dtype=torch.float32, device=x.device) / r)
    ang = torch.arange(start, start + T, dtype=torch.float32, device=x.device)[:, None] * inv
    ang = ang.view((1, T) + (1,) * (x.dim() - 3) + (r // 2,))
    e, o = x.float()[..., 0::2], x.float()[..., 1::2]
    return torch.stack([e * ang.cos() - o * ang.sin(), e * ang.sin() + o * ang.cos()], -1).flatten(-2).to(x.dtype)


STEPS = [
    ("q_lat", lambda ns: torch.einsum("bthd,hdc->bthc", ns["q_nope"], ns["w"][:, : ns["dn"]])),
    ("scores", lambda ns: (torch.einsum("bthc,bsc->bths", ns["q_lat"], ns["lat"])
                           + torch.einsum("bthr,bsr->bths", ns["q_pe"], ns["k_pe"])) * ns["scale"]),
    ("allowed", lambda ns: torch.ones(ns["T"], ns["S"], dtype=torch.bool, device=ns["lat"].device).tril()),
    ("masked", lambda ns: ns["scores"].masked_fill(~ns["allowed"][:, None, :], float("-inf"))),
    ("probs", lambda ns: ns["masked"].softmax(dim=-1)),
    ("ctx", lambda ns: torch.einsum("bths,bsc->bthc", ns["probs"], ns["lat"])),
    ("out", lambda ns: torch.einsum("bthc,hdc->bthd", ns["ctx"], ns["w"][:, ns["dn"]:]).flatten(2)),
]


def derive(ns):
    for name, step in STEPS:
        ns[name] = step(ns)
    return ns


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
        past = 0 if cache is None else cache[0].shape[1]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.H, self.dn + self.dr)
        lat, k_pe = self.wkv_a(x).split([self.c, self.dr], dim=-1)
        lat, k_pe = self.kv_norm(lat), rot(k_pe, past, self.theta)
        if cache is not None:
            lat, k_pe = torch.cat((cache[0], lat), 1), torch.cat((cache[1], k_pe), 1)
        ns = derive({
            "q_nope": q[..., : self.dn], "q_pe": rot(q[..., self.dn:], past, self.theta),
            "lat": lat, "k_pe": k_pe, "w": self.wkv_b.weight.view(self.H, self.dn + self.dv, self.c),
            "dn": self.dn, "T": T, "S": lat.shape[1], "scale": 1 / math.sqrt(self.dn + self.dr),
        })
        return self.wo(ns["out"]), (lat, k_pe)
# bug-line: 40
