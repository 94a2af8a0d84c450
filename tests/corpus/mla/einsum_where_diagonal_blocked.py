# attnprep: mla
# expect: wrong_output
# diagnosis: causal_masks_diagonal
"""Two einsums for the [nope; rope] halves (no concatenation), DeepSeek's complex RoPE, torch.where
for both masks; the causal comparison is strict, so a query does not see itself (is_causal only)."""
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
        return self.weight * (h * torch.rsqrt(h.square().mean(-1, keepdim=True) + self.eps)).type_as(x)


def rope_complex(x, theta):  # x (B, T, H, d): pairs (2i, 2i+1) as complex numbers
    B, T, H, d = x.shape
    freqs = 1.0 / theta ** (torch.arange(0, d, 2, device=x.device).float() / d)
    ang = torch.outer(torch.arange(T, device=x.device).float(), freqs)
    rot = torch.polar(torch.ones_like(ang), ang)[None, :, None, :]
    xc = torch.view_as_complex(x.float().reshape(B, T, H, d // 2, 2))
    return torch.view_as_real(xc * rot).reshape(B, T, H, d).type_as(x)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h, self.c = num_heads, kv_lora_rank
        self.dn, self.dr, self.dv = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        q = self.wq_b(self.q_norm(self.wq_a(x))).unflatten(-1, (self.h, self.dn + self.dr))
        q_nope, q_pe = q.split([self.dn, self.dr], -1)
        q_pe = rope_complex(q_pe, self.theta)
        c_kv, k_pe = self.wkv_a(x).split([self.c, self.dr], -1)
        k_pe = rope_complex(k_pe[:, :, None], self.theta)
        kv = self.wkv_b(self.kv_norm(c_kv)).unflatten(-1, (self.h, self.dn + self.dv))
        k_nope, v = kv.split([self.dn, self.dv], -1)
        s = torch.einsum("bqhd,bkhd->bhqk", q_nope, k_nope) + torch.einsum("bqhr,bkxr->bhqk", q_pe, k_pe)
        s = s / math.sqrt(self.dn + self.dr)
        ninf = torch.tensor(float("-inf"), dtype=s.dtype, device=s.device)
        if attention_mask is not None:
            s = torch.where(attention_mask[:, None, None, :], s, ninf)
        if is_causal:
            i = torch.arange(T, device=x.device)
            s = torch.where(i[None, :] < i[:, None], s, ninf)
        o = torch.einsum("bhqk,bkhd->bqhd", s.softmax(-1), v)
        return self.wo(o.flatten(2))
# bug-line: 62
