# attnprep: mla
# expect: mask_leak
# diagnosis: causal_masks_diagonal
"""Chunked over query rows; the per-chunk causal mask uses >= and hides the diagonal too."""
import math

import torch
import torch.nn as nn


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_heads, self.kv_lora_rank = num_heads, kv_lora_rank
        self.nope, self.rope, self.v_dim, self.theta = qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = nn.RMSNorm(q_lora_rank, eps=1e-6)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = nn.RMSNorm(kv_lora_rank, eps=1e-6)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def _rot(self, x):  # (B, T, H, r)
        T = x.shape[1]
        inv = self.theta ** (-torch.arange(0, self.rope, 2, device=x.device, dtype=x.dtype) / self.rope)
        ang = torch.arange(T, device=x.device, dtype=x.dtype)[:, None] * inv  # (T, r/2)
        c, s = ang.cos(), ang.sin()
        R = torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2)  # (T, r/2, 2, 2)
        pairs = x.unflatten(-1, (-1, 2))  # (B, T, H, r/2, 2)
        return torch.einsum("tpij,bthpj->bthpi", R, pairs).flatten(-2)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        H = self.num_heads
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, self.nope + self.rope)
        q = torch.cat([q[..., : self.nope], self._rot(q[..., self.nope:])], -1).transpose(1, 2)
        c_kv, k_pe = self.wkv_a(x).split([self.kv_lora_rank, self.rope], -1)
        k_pe = self._rot(k_pe[:, :, None, :])  # (B, T, 1, r)
        kv = self.wkv_b(self.kv_norm(c_kv)).view(B, T, H, self.nope + self.v_dim)
        k = torch.cat([kv[..., : self.nope], k_pe.expand(B, T, H, self.rope)], -1).transpose(1, 2)
        v = kv[..., self.nope:].transpose(1, 2)
        scale = 1 / math.sqrt(self.nope + self.rope)
        outs = []
        for i0 in range(0, T, 3):
            s = q[:, :, i0:i0 + 3] @ k.transpose(-1, -2) * scale  # (B, H, c, T)
            rows = torch.arange(i0, min(i0 + 3, T), device=x.device)
            if is_causal:
                s = s.masked_fill(torch.arange(T, device=x.device)[None, :] >= rows[:, None], -1e9)
            if attention_mask is not None:
                s = s.masked_fill(~attention_mask[:, None, None, :], -1e9)
            outs.append(s.softmax(-1) @ v)
        o = torch.cat(outs, dim=2).transpose(1, 2).reshape(B, T, H * self.v_dim)
        return self.wo(o)
# bug-line: 49
