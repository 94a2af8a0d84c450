# attnprep: mla
# expect: mask_leak
# diagnosis: mla_scale_sum_sqrt + mask_after_softmax
"""OpenNMT-py's MultiHeadedAttention habits: local `shape()` / `unshape()` closures, `query /=
math.sqrt(...)` before the matmul, `self.softmax = nn.Softmax(dim=-1)`, a `mask` turned into
`scores.masked_fill(mask, -1e18)`, the decoder's future mask built as `triu(ones, 1)`. The MLA
names are DeepSeek's. Two slips: the query is divided by sqrt(nope) + sqrt(rope), and the future
mask is applied to the attention after the softmax (zeroed, never renormalised)."""

import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, size, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(size))

    def forward(self, x):
        f = x.float()
        return self.weight * (f * torch.rsqrt(f.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)


def rotary(x, theta):
    # x: (batch, head_count, len, r), interleaved pairs
    n, r = x.size(2), x.size(-1)
    inv = theta ** (-torch.arange(0, r, 2, dtype=torch.float32, device=x.device) / r)
    ang = torch.arange(n, dtype=torch.float32, device=x.device).unsqueeze(1) * inv
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], r // 2, 2))
    return torch.view_as_real(xc * torch.polar(torch.ones_like(ang), ang)).flatten(-2).type_as(x)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.head_count = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.dim_nope, self.dim_rope, self.dim_v = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.rope_theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x, attention_mask=None, is_causal=False):
        batch_size, query_len, _ = x.size()
        head_count = self.head_count

        def shape(t, dim):
            return t.view(batch_size, -1, head_count, dim).transpose(1, 2)

        def unshape(t):
            return t.transpose(1, 2).contiguous().view(batch_size, -1, head_count * self.dim_v)

        query = shape(self.wq_b(self.q_norm(self.wq_a(x))), self.dim_nope + self.dim_rope)
        q_nope, q_pe = query.split([self.dim_nope, self.dim_rope], dim=-1)
        latent, k_pe = self.wkv_a(x).split([self.kv_lora_rank, self.dim_rope], dim=-1)
        kv = shape(self.wkv_b(self.kv_norm(latent)), self.dim_nope + self.dim_v)
        k_nope, value = kv.split([self.dim_nope, self.dim_v], dim=-1)
        q_pe = rotary(q_pe, self.rope_theta)
        k_pe = rotary(k_pe.unsqueeze(1), self.rope_theta).expand(-1, head_count, -1, -1)
        query = torch.cat([q_nope, q_pe], dim=-1)
        key = torch.cat([k_nope, k_pe], dim=-1)

        query = query / (math.sqrt(self.dim_nope) + math.sqrt(self.dim_rope))
        scores = torch.matmul(query, key.transpose(2, 3))
        if attention_mask is not None:
            mask = ~attention_mask.unsqueeze(1).unsqueeze(2)  # True = padding
            scores = scores.masked_fill(mask, -1e18)
        attn = self.softmax(scores).to(query.dtype)
        if is_causal:
            future_mask = torch.ones(query_len, query_len, device=x.device, dtype=torch.uint8).triu_(1).bool()
            attn = attn.masked_fill(future_mask, 0.0)
        context = unshape(torch.matmul(attn, value))
        return self.wo(context)
# bug-line: 73, 78
