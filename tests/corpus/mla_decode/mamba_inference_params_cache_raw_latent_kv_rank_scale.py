# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_cache_before_norm + mla_scale_kv_rank
"""Mamba-repo habits (mamba_ssm/modules): an `InferenceParams`-like `seqlen_offset`, a `_step()`
for the decode path beside `forward()`, `allocate_inference_cache`-style helper names, and a
`layer_idx` kept for nothing. The absorbed DeepSeek decode. Two slips: the latent is cached as
wkv_a gives it (kv_norm only applied when it is read back for the scores, so the returned cache is
the raw latent), and the scores are scaled by 1/sqrt(kv_lora_rank)."""

import math

import torch
import torch.nn as nn


class RMSNormGated(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def apply_rotary(x, seqlen_offset, theta):
    L, r = x.shape[1], x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, r, 2, device=x.device).float() / r)
    t = torch.arange(seqlen_offset, seqlen_offset + L, device=x.device).float()
    freqs = torch.polar(torch.ones(L, r // 2, device=x.device), torch.outer(t, inv))
    shape = (1, L) + (1,) * (x.dim() - 3) + (r // 2,)
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], r // 2, 2).contiguous())
    return torch.view_as_real(xc * freqs.view(shape)).flatten(-2).to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0, layer_idx=None):
        super().__init__()
        self.layer_idx = layer_idx
        self.nheads, self.d_latent = num_heads, kv_lora_rank
        self.d_nope, self.d_rope, self.d_v = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.rope_theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNormGated(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNormGated(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def _step(self, hidden_states, latent_cache, pe_cache, seqlen_offset):
        B, L, _ = hidden_states.shape
        h, dn, dr, dv = self.nheads, self.d_nope, self.d_rope, self.d_v
        q = self.wq_b(self.q_norm(self.wq_a(hidden_states))).view(B, L, h, dn + dr)
        q_nope, q_pe = q.split([dn, dr], -1)
        q_pe = apply_rotary(q_pe, seqlen_offset, self.rope_theta)
        latent, k_pe = self.wkv_a(hidden_states).split([self.d_latent, dr], -1)
        k_pe = apply_rotary(k_pe, seqlen_offset, self.rope_theta)
        latent_cache = torch.cat([latent_cache, latent], 1)
        pe_cache = torch.cat([pe_cache, k_pe], 1)
        kv = self.kv_norm(latent_cache)
        S = kv.shape[1]
        w = self.wkv_b.weight.view(h, dn + dv, self.d_latent)
        q_lat = torch.einsum("blhd,hdc->blhc", q_nope, w[:, :dn])
        scores = torch.einsum("blhc,bsc->blhs", q_lat, kv) + torch.einsum("blhr,bsr->blhs", q_pe, pe_cache)
        scores = scores * (1.0 / math.sqrt(self.d_latent))
        future = torch.arange(S, device=hidden_states.device)[None, :] > (
            torch.arange(L, device=hidden_states.device)[:, None] + seqlen_offset
        )
        scores = scores.masked_fill(future[:, None, :], float("-inf"))
        ctx = torch.einsum("blhs,bsc->blhc", scores.softmax(-1), kv)
        out = torch.einsum("blhc,hdc->blhd", ctx, w[:, dn:]).flatten(2)
        return self.wo(out), (latent_cache, pe_cache)

    def forward(self, x, cache=None):
        B = x.shape[0]
        if cache is None:  # allocate_inference_cache: empty buffers, seqlen_offset 0
            cache = (x.new_zeros(B, 0, self.d_latent), x.new_zeros(B, 0, self.d_rope))
        return self._step(x, cache[0], cache[1], seqlen_offset=cache[0].shape[1])
# bug-line: 63, 65, 70
