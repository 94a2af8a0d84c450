# attnprep: mla
# expect: wrong_output
# diagnosis: mla_norm_skipped + rope_cos_sin_swapped
"""A functools.partial pipeline: the query and latent paths are lists of stages composed with
reduce; RoPE's rotation matrix entries from a (cos, sin) table built once per length."""
from functools import partial, reduce

import torch
import torch.nn as nn


def compose(*fns):
    return lambda x: reduce(lambda acc, f: f(acc), fns, x)


def rms(x, weight, eps):
    xf = x.float()
    return weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x)


def rope_table(T, r, theta, device):
    inv = 1.0 / theta ** (torch.arange(0, r, 2, device=device, dtype=torch.float32) / r)
    ang = torch.outer(torch.arange(T, device=device, dtype=torch.float32), inv)
    return ang.cos(), ang.sin()


def rotate(x, table):
    # x (B, T, H, r); adjacent pairs
    cos, sin = table
    cos, sin = sin[:, None, :], cos[:, None, :]
    x0, x1 = x[..., 0::2].float(), x[..., 1::2].float()
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), -1).flatten(-2).type_as(x)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.c, self.n, self.r, self.vd = num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm_weight = nn.Parameter(torch.ones(q_lora_rank))
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm_weight = nn.Parameter(torch.ones(kv_lora_rank))
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        table = rope_table(T, self.r, self.theta, x.device)
        q_path = compose(self.wq_a, partial(rms, weight=self.q_norm_weight, eps=1e-6), self.wq_b,
                         lambda t: t.view(B, T, self.H, self.n + self.r))
        kv_path = compose(self.wkv_b, lambda t: t.view(B, T, self.H, self.n + self.vd))
        q_nope, q_pe = q_path(x).split([self.n, self.r], -1)
        c_kv, k_pe = self.wkv_a(x).split([self.c, self.r], -1)
        k_nope, v = kv_path(c_kv).split([self.n, self.vd], -1)
        q = torch.cat([q_nope, rotate(q_pe, table)], -1).transpose(1, 2)
        k_pe = rotate(k_pe[:, :, None, :], table).expand(B, T, self.H, self.r)
        k = torch.cat([k_nope, k_pe], -1).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / (self.n + self.r) ** 0.5
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep.tril()
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        p = s.masked_fill(~keep, float("-inf")).softmax(-1)
        o = (p @ v.transpose(1, 2)).transpose(1, 2).reshape(B, T, self.H * self.vd)
        return self.wo(o)
# bug-line: 30, 54
