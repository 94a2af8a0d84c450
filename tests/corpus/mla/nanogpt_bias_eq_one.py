# attnprep: mla
# expect: mask_leak
# diagnosis: causal_inverted
"""nanoGPT tril buffer, but masked where it equals 1: each query sees only the future (and itself is hidden)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

MAX_LEN = 64


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.n_head = num_heads
        self.nope, self.rope, self.dv, self.r_kv = qk_nope_head_dim, qk_rope_head_dim, v_head_dim, kv_lora_rank
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = nn.RMSNorm(q_lora_rank, eps=1e-6)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = nn.RMSNorm(kv_lora_rank, eps=1e-6)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)
        self.register_buffer("bias", torch.tril(torch.ones(MAX_LEN, MAX_LEN)).view(1, 1, MAX_LEN, MAX_LEN))
        inv = 1.0 / rope_theta ** (torch.arange(0, qk_qk := qk_rope_head_dim, 2).float() / qk_qk)
        ang = torch.outer(torch.arange(MAX_LEN).float(), inv)  # (L, rope/2)
        self.register_buffer("cos", ang.cos(), persistent=False)
        self.register_buffer("sin", ang.sin(), persistent=False)

    def rope_(self, x):  # x: (B, H, T, rope)
        T = x.size(-2)
        cos, sin = self.cos[:T], self.sin[:T]
        x1, x2 = x[..., ::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.size()
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.n_head, -1).transpose(1, 2)
        q_nope, q_pe = q.split([self.nope, self.rope], dim=-1)
        c_kv, k_pe = self.wkv_a(x).split([self.r_kv, self.rope], dim=-1)
        kv = self.wkv_b(self.kv_norm(c_kv)).view(B, T, self.n_head, -1).transpose(1, 2)
        k_nope, v = kv.split([self.nope, self.dv], dim=-1)
        q_pe = self.rope_(q_pe)
        k_pe = self.rope_(k_pe.unsqueeze(1))  # (B, 1, T, rope)
        q = torch.cat([q_nope, q_pe], dim=-1)
        k = torch.cat([k_nope, k_pe.expand(-1, self.n_head, -1, -1)], dim=-1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        if is_causal:
            att = att.masked_fill(self.bias[:, :, :T, :T] == 1, float("-inf"))
        if attention_mask is not None:
            att = att.masked_fill(attention_mask[:, None, None, :] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, self.n_head * self.dv)
        return self.wo(y)
# bug-line: 51
