# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_absorb_transpose + mla_rope_position_zero
"""Class attributes as defaults: `start_pos = 0` and `attn_impl = "absorb"` on the class (as a
config would set them), the weights viewed once into a per-head tensor by a method, the absorbed
query and the value-up projection as batched matmuls (torch.matmul broadcasting over heads)."""
import math

import torch
import torch.nn as nn


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    t = torch.arange(seq_len, dtype=torch.float64, device=device)
    angles = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x, freqs_cis):
    pairs = x.to(torch.float64).unflatten(-1, (-1, 2)).contiguous()
    y = torch.view_as_complex(pairs) * freqs_cis[:, None, :]
    return torch.view_as_real(y).flatten(-2).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.to(torch.promote_types(x.dtype, torch.float32))
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class MLADecode(nn.Module):
    attn_impl = "absorb"
    start_pos = 0

    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.qk_nope_head_dim = qk_nope_head_dim
        self.qk_rope_head_dim = qk_rope_head_dim
        self.v_head_dim = v_head_dim
        self.rope_theta = rope_theta
        self.softmax_scale = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def absorbed(self):
        w = self.wkv_b.weight.view(self.n_heads, -1, self.kv_lora_rank)  # (H, nope + v, c)
        w_uk = w[:, :self.qk_nope_head_dim]  # (H, nope, c)
        w_uv = w[:, self.qk_nope_head_dim:]  # (H, v, c)
        return w_uk, w_uv

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        nope, rope = self.qk_nope_head_dim, self.qk_rope_head_dim
        past = 0 if cache is None else cache[0].size(1)
        end_pos = self.start_pos + seqlen
        freqs_cis = precompute_freqs_cis(rope, end_pos, self.rope_theta, device=x.device)[end_pos - seqlen:]
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(bsz, seqlen, self.n_heads, nope + rope)
        q_nope, q_pe = q.split([nope, rope], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)
        kv, k_pe = self.wkv_a(x).split([self.kv_lora_rank, rope], dim=-1)
        kv = self.kv_norm(kv)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis).squeeze(2)
        if cache is not None:
            kv = torch.cat([cache[0], kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        total = kv.size(1)
        w_uk, w_uv = self.absorbed()
        q_lat = torch.matmul(q_nope.transpose(1, 2), w_uk)  # (B, H, T, nope) @ (H, nope, c) -> (B, H, T, c)
        scores = (torch.matmul(q_lat, kv.unsqueeze(1).transpose(-1, -2))
                  + torch.matmul(q_pe.transpose(1, 2), k_pe.unsqueeze(1).transpose(-1, -2))) * self.softmax_scale
        keep = torch.ones(seqlen, total, dtype=torch.bool, device=x.device).tril(total - seqlen)
        scores = scores.masked_fill(~keep, float("-inf")).softmax(dim=-1)
        o = torch.matmul(scores, kv.unsqueeze(1))  # (B, H, T, c)
        o = torch.matmul(o, w_uv.reshape(self.n_heads, self.kv_lora_rank, self.v_head_dim))
        o = o.transpose(1, 2).reshape(bsz, seqlen, -1)
        return self.wo(o), (kv, k_pe)
# bug-line: 70, 89
