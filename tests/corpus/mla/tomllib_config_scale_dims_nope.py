# attnprep: mla
# expect: wrong_output
# diagnosis: mla_scale_partial
"""A TOML document as the module's defaults (tomllib.loads of a string): the attention reads which
per-head widths enter the softmax scale from it; "nope" alone was written where the whole
[nope; rope] head belongs."""
import math
import tomllib

import torch
import torch.nn as nn
import torch.nn.functional as F

DEFAULTS = tomllib.loads("""
[attention]
norm_eps = 1e-6
softmax_scale_dims = ["nope"]
fill = "-inf"
""")["attention"]


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float64, device=device), freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x, freqs_cis):
    pairs = x.to(torch.float64).unflatten(-1, (-1, 2)).contiguous()
    y = torch.view_as_complex(pairs) * freqs_cis[:, None, :]
    return torch.view_as_real(y).flatten(-2).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=DEFAULTS["norm_eps"]):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h, self.c = num_heads, kv_lora_rank
        self.nope, self.rope, self.dv = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        widths = {"nope": qk_nope_head_dim, "rope": qk_rope_head_dim}
        self.softmax_scale = 1.0 / math.sqrt(sum(widths[k] for k in DEFAULTS["softmax_scale_dims"]))
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        H, nope, rope, dv = self.h, self.nope, self.rope, self.dv
        fc = precompute_freqs_cis(rope, T, self.theta, x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, nope + rope)
        q_nope, q_pe = q.split([nope, rope], -1)
        q_pe = apply_rotary_emb(q_pe, fc)
        c_kv, k_pe = self.wkv_a(x).split([self.c, rope], -1)
        k_pe = apply_rotary_emb(k_pe[:, :, None], fc)
        k_nope, v = self.wkv_b(self.kv_norm(c_kv)).view(B, T, H, nope + dv).split([nope, dv], -1)
        scores = (torch.einsum("bshd,bthd->bhst", q_nope, k_nope)
                  + torch.einsum("bshr,btzr->bhst", q_pe, k_pe)) * self.softmax_scale
        fill = float(DEFAULTS["fill"])
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], fill)
        if is_causal:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), fill)
        out = torch.einsum("bhst,bthd->bshd", F.softmax(scores, -1), v)
        return self.wo(out.reshape(B, T, H * dv))
# bug-line: 17
