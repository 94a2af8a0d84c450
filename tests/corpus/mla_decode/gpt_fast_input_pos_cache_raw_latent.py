# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_cache_before_norm
"""gpt-fast habits for MLA's absorb path: `input_pos` for the new tokens' absolute positions, the
rotary tables indexed by it (`freqs_cis[input_pos]`), an `update(input_pos, kv, pe)` that grows the
cache, `wkv_b.weight.view(n_heads, -1, kv_lora_rank)` with w_uk / w_uv slices, a boolean mask from
`input_pos[:, None] >= arange(S)`. The cache is grown with the latent as wkv_a returns it and kv_norm
is applied to the whole cache on every call: the outputs are right, but the cache returned holds
c_kv before kv_norm."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.type_as(x)


def precompute_freqs_cis(seq_len, n_elem, base, device):
    freqs = 1.0 / (base ** (torch.arange(0, n_elem, 2, device=device)[: (n_elem // 2)].float() / n_elem))
    t = torch.arange(seq_len, device=device)
    freqs = torch.outer(t, freqs)
    return torch.stack([torch.cos(freqs), torch.sin(freqs)], dim=-1)  # (seq_len, n_elem/2, 2)


def apply_rotary_emb(x, freqs_cis):
    """x (B, T, H, r), freqs_cis (T, r/2, 2): gpt-fast's interleaved rotation."""
    xshaped = x.float().reshape(*x.shape[:-1], -1, 2)
    freqs_cis = freqs_cis.view(1, xshaped.size(1), 1, xshaped.size(3), 2)
    x_out2 = torch.stack(
        [
            xshaped[..., 0] * freqs_cis[..., 0] - xshaped[..., 1] * freqs_cis[..., 1],
            xshaped[..., 1] * freqs_cis[..., 0] + xshaped[..., 0] * freqs_cis[..., 1],
        ],
        -1,
    )
    return x_out2.flatten(3).type_as(x)


def update(cache, kv, pe):
    if cache is None:
        return kv, pe
    return torch.cat([cache[0], kv], dim=1), torch.cat([cache[1], pe], dim=1)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.qk_nope_head_dim = qk_nope_head_dim
        self.qk_rope_head_dim = qk_rope_head_dim
        self.v_head_dim = v_head_dim
        self.rope_base = rope_theta
        self.softmax_scale = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        start = 0 if cache is None else cache[0].shape[1]
        input_pos = torch.arange(start, start + seqlen, device=x.device)
        freqs_cis = precompute_freqs_cis(start + seqlen, self.qk_rope_head_dim, self.rope_base, x.device)[input_pos]

        q = self.wq_b(self.q_norm(self.wq_a(x))).view(bsz, seqlen, self.n_heads, -1)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)

        kv, k_pe = torch.split(self.wkv_a(x), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis).squeeze(2)
        kv_cache, pe_cache = update(cache, kv, k_pe)
        normed = self.kv_norm(kv_cache)

        wkv_b = self.wkv_b.weight.view(self.n_heads, -1, self.kv_lora_rank)
        w_uk = wkv_b[:, : self.qk_nope_head_dim]
        w_uv = wkv_b[:, -self.v_head_dim:]
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, w_uk)
        scores = (torch.einsum("bshc,btc->bsht", q_nope, normed)
                  + torch.einsum("bshr,btr->bsht", q_pe, pe_cache)) * self.softmax_scale
        S = normed.shape[1]
        mask = input_pos[:, None] >= torch.arange(S, device=x.device)[None, :]  # (T, S)
        scores = scores.masked_fill(~mask[None, :, None, :], float("-inf"))
        scores = F.softmax(scores, dim=-1, dtype=torch.float32).type_as(x)
        out = torch.einsum("bsht,btc->bshc", scores, normed)
        out = torch.einsum("bshc,hdc->bshd", out, w_uv)
        return self.wo(out.flatten(2)), (kv_cache, pe_cache)
# bug-line: 88, 89
