# attnprep: mla
# expect: wrong_output
"""MLA with a loop over heads; q_pe is rotated but k_pe is not."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate(x, cos, sin):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
    return out.flatten(-2)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.nope, self.rope, self.dv = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.rope_theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = nn.RMSNorm(q_lora_rank, eps=1e-6)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = nn.RMSNorm(kv_lora_rank, eps=1e-6)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, nope, rope, dv = self.num_heads, self.nope, self.rope, self.dv
        inv = 1.0 / self.rope_theta ** (torch.arange(0, rope, 2, device=x.device).float() / rope)
        ang = torch.arange(T, device=x.device).float()[:, None] * inv[None, :]
        cos, sin = ang.cos(), ang.sin()
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, nope + rope)
        c_kv, k_pe = self.wkv_a(x).split([self.kv_lora_rank, rope], dim=-1)
        kv = self.wkv_b(self.kv_norm(c_kv)).view(B, T, H, nope + dv)
        scale = 1.0 / math.sqrt(nope + rope)
        outs = []
        for h in range(H):
            q_nope, q_pe = q[:, :, h, :nope], q[:, :, h, nope:]
            q_pe = rotate(q_pe, cos, sin)
            k_nope, v = kv[:, :, h, :nope], kv[:, :, h, nope:]
            qh = torch.cat([q_nope, q_pe], dim=-1)
            kh = torch.cat([k_nope, k_pe], dim=-1)
            scores = qh @ kh.transpose(-2, -1) * scale
            if attention_mask is not None:
                scores = scores.masked_fill(~attention_mask[:, None, :], float("-inf"))
            if is_causal:
                scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
            outs.append(F.softmax(scores, dim=-1) @ v)
        return self.wo(torch.cat(outs, dim=-1))
