# attnprep: mla
# expect: passed
"""Correct: every helper documented with doctest examples (`>>> split_last(torch.zeros(2, 5), [3, 2])`),
the DeepSeek RoPE as a real-valued 2x2 rotation applied with torch.stack / unbind on the pair axis,
the masks merged into one additive bias with torch.where, and wo applied to a flatten(2)."""

import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    """Root-mean-square norm.

    >>> RMSNorm(4)(torch.ones(1, 4)).shape
    torch.Size([1, 4])
    """

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        f = x.float()
        return self.weight * (f / torch.sqrt(f.square().mean(-1, keepdim=True) + self.eps)).to(x.dtype)


def split_last(t, sizes):
    """Split the last axis.

    >>> [p.shape[-1] for p in split_last(torch.zeros(2, 5), [3, 2])]
    [3, 2]
    """
    return torch.split(t, sizes, dim=-1)


def rotate_adjacent(x, theta):
    """Rotate adjacent pairs of x (B, T, H, r) by t * theta^(-2i/r).

    >>> rotate_adjacent(torch.ones(1, 1, 1, 2), 10000.0)
    tensor([[[[1., 1.]]]])
    """
    B, T, H, r = x.shape
    inv = theta ** (-torch.arange(0, r, 2, device=x.device, dtype=torch.float32) / r)  # (r/2,)
    ang = torch.arange(T, device=x.device, dtype=torch.float32)[:, None] * inv  # (T, r/2)
    cos, sin = ang.cos()[None, :, None], ang.sin()[None, :, None]  # (1, T, 1, r/2)
    a, b = x.float().unflatten(-1, (r // 2, 2)).unbind(-1)  # (B, T, H, r/2) each
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2).to(x.dtype)


def additive_bias(T, attention_mask, is_causal, device, dtype):
    """0 where a key may be seen, -inf elsewhere: (B or 1, 1, T, T).

    >>> additive_bias(2, None, True, "cpu", torch.float32)[0, 0]
    tensor([[0., -inf],
            [0., 0.]])
    """
    allowed = torch.ones(1, 1, T, T, dtype=torch.bool, device=device)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    if is_causal:
        allowed = allowed & torch.ones(T, T, dtype=torch.bool, device=device).tril()
    zero = torch.zeros((), dtype=dtype, device=device)
    return torch.where(allowed, zero, torch.tensor(float("-inf"), dtype=dtype, device=device))


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.dims = (num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim)
        self.rope_theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        H, c, nope, rope, dv = self.dims
        q_nope, q_pe = split_last(self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, -1), [nope, rope])
        c_kv, k_pe = split_last(self.wkv_a(x), [c, rope])
        k_nope, v = split_last(self.wkv_b(self.kv_norm(c_kv)).view(B, T, H, -1), [nope, dv])
        q_pe = rotate_adjacent(q_pe, self.rope_theta)
        k_pe = rotate_adjacent(k_pe[:, :, None], self.rope_theta)  # (B, T, 1, rope)
        scores = (torch.einsum("bthd,bshd->bhts", q_nope, k_nope)
                  + torch.einsum("bthr,bsxr->bhts", q_pe, k_pe)) / math.sqrt(nope + rope)
        scores = scores + additive_bias(T, attention_mask, is_causal, x.device, scores.dtype)
        probs = scores.softmax(-1)
        out = torch.einsum("bhts,bshd->bthd", probs, v)  # (B, T, H, dv)
        return self.wo(out.flatten(2))
