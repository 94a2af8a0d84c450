# attnprep: mla
# expect: wrong_output
# diagnosis: mla_norm_skipped
"""Buggy: kv_norm never applied to the latent; wkv_b written as two layers, w_uk (kv_lora_rank -> H·nope) and w_uv (kv_lora_rank -> H·dv),
as vLLM-era MLA code keeps W_UK and W_UV apart; wq_b likewise as wq_nope and wq_rope. RoPE by the
DeepSeek complex helpers."""
import math
import torch
import torch.nn as nn


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, device=device).float() / dim))
    ang = torch.outer(torch.arange(seq_len, device=device).float(), freqs)
    return torch.polar(torch.ones_like(ang), ang)


def apply_rotary_emb(x, freqs_cis):
    z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(z * freqs_cis[:, None, :]).flatten(-2).type_as(x)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h, self.nope, self.rope, self.dv, self.c = num_heads, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, kv_lora_rank
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_nope = nn.Linear(q_lora_rank, num_heads * qk_nope_head_dim, bias=False)
        self.wq_rope = nn.Linear(q_lora_rank, num_heads * qk_rope_head_dim, bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.w_uk = nn.Linear(kv_lora_rank, num_heads * qk_nope_head_dim, bias=False)
        self.w_uv = nn.Linear(kv_lora_rank, num_heads * v_head_dim, bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        cq = self.q_norm(self.wq_a(x))
        q_nope = self.wq_nope(cq).view(B, T, self.h, self.nope)
        freqs = precompute_freqs_cis(self.rope, T, self.theta, x.device)
        q_pe = apply_rotary_emb(self.wq_rope(cq).view(B, T, self.h, self.rope), freqs)
        c_kv, k_pe = self.wkv_a(x).split([self.c, self.rope], -1)
        k_pe = apply_rotary_emb(k_pe[:, :, None], freqs)
        c_kv = c_kv
        k_nope = self.w_uk(c_kv).view(B, T, self.h, self.nope)
        v = self.w_uv(c_kv).view(B, T, self.h, self.dv)
        s = (torch.einsum("bqhd,bkhd->bhqk", q_nope, k_nope) + torch.einsum("bqhr,bkxr->bhqk", q_pe, k_pe))
        s = s / math.sqrt(self.nope + self.rope)
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        o = torch.einsum("bhqk,bkhd->bqhd", s.softmax(-1), v)
        return self.wo(o.reshape(B, T, -1))
# bug-line: 58
