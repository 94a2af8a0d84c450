# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_rope_position_zero
"""Absorbed MLA with the per-head up-projections kept in a dict (w["uk"], w["uv"]) built once per
call, RoPE from real cos / sin of the pair angles, einsum over named axes."""
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.type_as(x)


def rotate_pairs(x, positions, theta):
    # x (..., T, r) with T at dim -2 after moving; positions (T,)
    r = x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, r, 2, device=x.device).float() / r)
    ang = positions.float()[:, None] * inv                 # (T, r/2)
    cos, sin = ang.cos(), ang.sin()
    a, b = x.float()[..., 0::2], x.float()[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], -1).flatten(-2).type_as(x)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.c = num_heads, kv_lora_rank
        self.nope, self.rope, self.vd = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def weights(self):
        w = self.wkv_b.weight.view(self.H, self.nope + self.vd, self.c)
        return {"uk": w[:, :self.nope], "uv": w[:, self.nope:]}      # (H, nope, c), (H, v, c)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        T_past = 0 if cache is None else cache[0].shape[1]
        w = self.weights()
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.H, self.nope + self.rope)
        q_nope, q_pe = q.split([self.nope, self.rope], -1)
        c_kv, k_pe = self.wkv_a(x).split([self.c, self.rope], -1)
        c_kv = self.kv_norm(c_kv)
        pos = torch.arange(T, device=x.device)
        q_pe = rotate_pairs(q_pe.transpose(1, 2), pos, self.theta).transpose(1, 2)   # (B, T, H, r)
        k_pe = rotate_pairs(k_pe, pos, self.theta)                                      # (B, T, r)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], 1)
            k_pe = torch.cat([cache[1], k_pe], 1)
        S = c_kv.shape[1]
        q_abs = torch.einsum("bthn,hnc->bthc", q_nope, w["uk"])
        scores = (torch.einsum("bthc,bsc->bhts", q_abs, c_kv)
                  + torch.einsum("bthr,bsr->bhts", q_pe, k_pe)) * (self.nope + self.rope) ** -0.5
        allowed = torch.arange(S, device=x.device)[None, :] <= (T_past + torch.arange(T, device=x.device))[:, None]
        probs = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
        o = torch.einsum("bhts,bsc->bthc", probs, c_kv)
        o = torch.einsum("bthc,hvc->bthv", o, w["uv"])
        return self.wo(o.reshape(B, T, self.H * self.vd)), (c_kv, k_pe)
# bug-line: 59
