# attnprep: mla
# expect: wrong_output
# diagnosis: mla_scale_partial
"""हिंदी टिप्पणियाँ (Hindi comments), DeepSeek-V2's naming kept (wq_a / wq_b, wkv_a / wkv_b,
q_pe / k_pe), the rotary as real cos / sin pairs on even / odd features; the softmax scale taken
from the nope part of the head only."""
import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        y = x.float()  # float32 में आँकड़े
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * y.type_as(x)


def rotary(x, theta):
    # x: (B, T, H, r) — जोड़े (x[2i], x[2i+1]) को स्थिति t के कोण से घुमाना
    T, r = x.shape[1], x.shape[-1]
    freqs = 1.0 / theta ** (torch.arange(0, r, 2, device=x.device, dtype=torch.float64) / r)
    ang = torch.outer(torch.arange(T, device=x.device, dtype=torch.float64), freqs)  # (T, r/2)
    cos, sin = ang.cos()[None, :, None, :], ang.sin()[None, :, None, :]
    xe, xo = x[..., 0::2].double(), x[..., 1::2].double()
    out = torch.stack([xe * cos - xo * sin, xe * sin + xo * cos], dim=-1)  # (B, T, H, r/2, 2)
    return out.flatten(-2).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.nope = qk_nope_head_dim
        self.rope = qk_rope_head_dim
        self.dv = v_head_dim
        self.theta = rope_theta
        self.softmax_scale = self.nope ** -0.5
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (self.nope + self.rope), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + self.rope, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (self.nope + self.dv), bias=False)
        self.wo = nn.Linear(num_heads * self.dv, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        H = self.n_heads
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, -1)  # क्वेरी: निम्न-रैंक
        q_nope, q_pe = q.split([self.nope, self.rope], dim=-1)
        q_pe = rotary(q_pe, self.theta)
        kv, k_pe = self.wkv_a(x).split([self.kv_lora_rank, self.rope], dim=-1)
        k_pe = rotary(k_pe[:, :, None, :], self.theta)  # (B, T, 1, r): सभी हेड के लिए एक
        kv = self.wkv_b(self.kv_norm(kv)).view(B, T, H, -1)
        k_nope, v = kv.split([self.nope, self.dv], dim=-1)
        # अंक: nope भाग और rope भाग का योग
        scores = torch.einsum("bthd,bshd->bhts", q_nope, k_nope) + torch.einsum("bthr,bsr->bhts", q_pe, k_pe[:, :, 0])
        scores = scores * self.softmax_scale
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        probs = scores.softmax(dim=-1)  # (B, H, T, T)
        out = torch.einsum("bhts,bshd->bthd", probs, v)
        return self.wo(out.reshape(B, T, H * self.dv))
# bug-line: 46
