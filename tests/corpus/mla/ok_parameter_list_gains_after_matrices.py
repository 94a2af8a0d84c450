# attnprep: mla
# expect: passed
"""Correct: every weight in one nn.ParameterList in DeepSeek's order (wq_a, q_norm gain, wq_b, wkv_a, kv_norm gain, wkv_b, wo) used through F.linear; each gain sits right after the down-projection it normalises, so its place alone would make it that matrix's bias."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    t = torch.arange(seq_len, dtype=torch.float64, device=device)
    angles = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x, freqs_cis):
    pairs = x.to(torch.float64).unflatten(-1, (-1, 2)).contiguous()
    y = torch.view_as_complex(pairs) * freqs_cis[:, None, :]
    return torch.view_as_real(y).flatten(-2).to(x.dtype)


def rms(x, g, eps=1e-6):
    h = x.float()
    return g * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    """所有权重放在一个 ParameterList 里，按 DeepSeek 的顺序：wq_a, q_norm, wq_b, wkv_a, kv_norm, wkv_b, wo。"""

    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h, self.c = num_heads, kv_lora_rank
        self.nope, self.rope, self.dv = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        qk = qk_nope_head_dim + qk_rope_head_dim
        shapes = [(q_lora_rank, d_model), (q_lora_rank,), (num_heads * qk, q_lora_rank),
                  (kv_lora_rank + qk_rope_head_dim, d_model), (kv_lora_rank,),
                  (num_heads * (qk_nope_head_dim + v_head_dim), kv_lora_rank), (d_model, num_heads * v_head_dim)]
        self.w = nn.ParameterList([nn.Parameter(torch.ones(s) if len(s) == 1 else torch.randn(s) * 0.02) for s in shapes])

    def forward(self, x, attention_mask=None, is_causal=False):
        wq_a, g_q, wq_b, wkv_a, g_kv, wkv_b, wo = self.w
        B, T, _ = x.shape
        H, nope, rope, dv = self.h, self.nope, self.rope, self.dv
        q = F.linear(rms(F.linear(x, wq_a), g_q), wq_b).view(B, T, H, nope + rope)
        q_nope, q_pe = q.split([nope, rope], -1)
        fc = precompute_freqs_cis(rope, T, self.theta, device=x.device)
        q_pe = apply_rotary_emb(q_pe, fc)
        c_kv, k_pe = F.linear(x, wkv_a).split([self.c, rope], -1)
        k_pe = apply_rotary_emb(k_pe[:, :, None], fc)                       # (B, T, 1, rope)
        kv = F.linear(rms(c_kv, g_kv), wkv_b).view(B, T, H, nope + dv)
        k_nope, v = kv.split([nope, dv], -1)
        qq = torch.cat([q_nope, q_pe], -1)
        kk = torch.cat([k_nope, k_pe.expand(B, T, H, rope)], -1)
        s = torch.einsum("bshd,bthd->bhst", qq, kk) / math.sqrt(nope + rope)
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep.tril()
        keep = keep[None, None]
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        s = s.masked_fill(~keep, float("-inf")).softmax(-1)
        o = torch.einsum("bhst,bthd->bshd", s, v).reshape(B, T, H * dv)
        return F.linear(o, wo)
