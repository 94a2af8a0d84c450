# attnprep: mla
# expect: passed
"""Correct: real-arithmetic interleaved RoPE on even/odd slices, cos/sin tables in non-persistent buffers
built for 4 positions and extended on demand, RMSNorm via torch.linalg.vector_norm."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps, self.dim = eps, dim
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        rms = torch.linalg.vector_norm(h, dim=-1, keepdim=True) / math.sqrt(self.dim)
        return (h / torch.sqrt(rms * rms + self.eps)).to(x.dtype) * self.weight


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
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
        self._build(4)

    def _build(self, n):
        inv = self.theta ** (-torch.arange(0, self.rope, 2, dtype=torch.float32) / self.rope)
        ang = torch.arange(n, dtype=torch.float32)[:, None] * inv[None, :]
        self.register_buffer("cos_t", ang.cos(), persistent=False)
        self.register_buffer("sin_t", ang.sin(), persistent=False)

    def rot(self, x):  # x (B, T, h, r)
        T = x.shape[1]
        if T > self.cos_t.shape[0]:
            self._build(2 * T)
        cos = self.cos_t[:T].to(x.device)[None, :, None, :]
        sin = self.sin_t[:T].to(x.device)[None, :, None, :]
        x1, x2 = x[..., 0::2].float(), x[..., 1::2].float()
        out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
        return out.flatten(-2).to(x.dtype)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.H, -1)
        q_nope, q_pe = q[..., :self.nope], self.rot(q[..., self.nope:])
        kv_a = self.wkv_a(x)
        c_kv, k_pe = kv_a[..., :self.c], self.rot(kv_a[..., self.c:].unsqueeze(2))
        kv = self.wkv_b(self.kv_norm(c_kv)).view(B, T, self.H, -1)
        k_nope, v = kv[..., :self.nope], kv[..., self.nope:]
        q = torch.cat((q_nope, q_pe), -1).transpose(1, 2)
        k = torch.cat((k_nope, k_pe.expand(-1, -1, self.H, -1)), -1).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.nope + self.rope)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        y = F.softmax(s, -1) @ v.transpose(1, 2)
        return self.wo(y.transpose(1, 2).reshape(B, T, -1))
