# attnprep: mla
# expect: wrong_output
# diagnosis: rope_cos_sin_swapped + mla_norm_skipped
"""cmath habits: the rotations are Python complex numbers built position by position with
complex(cos, sin) (then one torch.tensor of them); the real and imaginary parts were given in the
wrong order, and the latent went to wkv_b without its kv_norm."""
import cmath
import math

import torch
import torch.nn as nn


def rotation_table(dim, seq_len, theta):
    rows = []
    for t in range(seq_len):
        row = []
        for i in range(dim // 2):
            angle = t * theta ** (-2 * i / dim)
            row.append(complex(math.sin(angle), math.cos(angle)))
        rows.append(row)
    return torch.tensor(rows, dtype=torch.complex128).reshape(seq_len, dim // 2)


def rotate(x, table):
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], -1, 2).contiguous())  # (B, T, H, r/2)
    return torch.view_as_real(z * table[:, None, :]).reshape(x.shape).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h / torch.sqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.nope, self.rope, self.v_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
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
        H = self.n_heads
        table = rotation_table(self.rope, T, self.rope_theta).to(x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, self.nope + self.rope)
        q_nope, q_pe = q[..., :self.nope], rotate(q[..., self.nope:], table)
        kv_a = self.wkv_a(x)
        c_kv, k_pe = kv_a[..., :self.kv_lora_rank], kv_a[..., self.kv_lora_rank:]
        k_pe = rotate(k_pe.unsqueeze(2), table).expand(B, T, H, self.rope)
        kv = self.wkv_b(c_kv).view(B, T, H, self.nope + self.v_dim)
        k = torch.cat([kv[..., :self.nope], k_pe], -1).transpose(1, 2)
        v = kv[..., self.nope:].transpose(1, 2)
        q = torch.cat([q_nope, q_pe], -1).transpose(1, 2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.nope + self.rope)
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], -1e9)
        if is_causal:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), -1e9)
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, H * self.v_dim)
        return self.wo(out)
# bug-line: 20, 66
