# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_absorb_transpose
"""xformers' memory_efficient names: `_memory_efficient_attention_forward(query, key, value,
attn_bias, scale)` on (B, M, H, K) tensors, an `attn_bias` built like
`LowerTriangularFromBottomRightMask().materialize(shape)`, `BlockDiagonal`-free. The absorbed MLA
decode on top, with the latents as a single shared "head" broadcast over H. W_UK is cut from
wkv_b's (H, nope + dv, c) view and turned into (H, c, nope) with reshape instead of a transpose."""

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


def rotary_interleaved(x, offset, theta):
    M, r = x.shape[1], x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, r, 2, dtype=torch.float32, device=x.device) / r)
    ang = torch.outer(torch.arange(offset, offset + M, dtype=torch.float32, device=x.device), inv)
    ang = ang.view((1, M) + (1,) * (x.dim() - 3) + (r // 2,))
    z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], r // 2, 2).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(ang), ang)).flatten(-2).to(x.dtype)


def lower_triangular_from_bottom_right(M, N, device):
    """materialize((M, N)) of xformers' LowerTriangularFromBottomRightMask: 0 / -inf."""
    i = torch.arange(M, device=device)[:, None] + (N - M)
    j = torch.arange(N, device=device)[None, :]
    return torch.zeros(M, N, device=device).masked_fill(j > i, float("-inf"))


def _memory_efficient_attention_forward(query, key, value, attn_bias, scale):
    # query (B, M, H, K), key (B, N, 1, K), value (B, N, 1, Kv) -> (B, M, H, Kv)
    attn = torch.einsum("bmhk,bnk->bhmn", query, key[:, :, 0]) * scale  # the one key "head" serves all
    attn = (attn + attn_bias).softmax(-1)
    return torch.einsum("bhmn,bnk->bmhk", attn, value[:, :, 0])


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
        B, M, _ = x.shape
        H, c, dn, dr, dv = self.H, self.c, self.dn, self.dr, self.dv
        offset = 0 if cache is None else cache[0].shape[1]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, M, H, dn + dr)
        q_nope, q_pe = q.split([dn, dr], -1)
        q_pe = rotary_interleaved(q_pe, offset, self.theta)
        lat, k_pe = self.wkv_a(x).split([c, dr], -1)
        lat, k_pe = self.kv_norm(lat), rotary_interleaved(k_pe, offset, self.theta)
        if cache is not None:
            lat, k_pe = torch.cat([cache[0], lat], 1), torch.cat([cache[1], k_pe], 1)
        N = lat.shape[1]
        w = self.wkv_b.weight.view(H, dn + dv, c)
        w_uk = w[:, :dn].reshape(H, c, dn)  # (H, c, dn)
        w_uv = w[:, dn:]  # (H, dv, c)
        query = torch.cat([torch.einsum("bmhd,hcd->bmhc", q_nope, w_uk), q_pe], -1)  # (B, M, H, c + dr)
        key = torch.cat([lat, k_pe], -1)[:, :, None]  # (B, N, 1, c + dr)
        bias = lower_triangular_from_bottom_right(M, N, x.device).to(x.dtype)
        ctx = _memory_efficient_attention_forward(query, key, lat[:, :, None], bias, 1.0 / math.sqrt(dn + dr))
        out = torch.einsum("bmhc,hdc->bmhd", ctx, w_uv).reshape(B, M, H * dv)
        return self.wo(out), (lat, k_pe)
# bug-line: 77
