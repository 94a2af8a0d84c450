# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_scale_kv_rank
"""DeepSeek-V3's official inference/model.py, attn_impl="absorb": wkv_b.weight viewed (n_local_heads,
-1, kv_lora_rank), q_nope absorbed with einsum "bshd,hdc->bshc", scores from the latent and the shared
rope key, the output mapped through the value rows after the weighted sum; the static kv_cache /
pe_cache buffers replaced by the passed-in cache, start_pos = its length."""
import torch
import torch.nn as nn


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    t = torch.arange(seq_len, dtype=torch.float64, device=device)
    angles = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x, freqs_cis):
    dtype = x.dtype
    x = torch.view_as_complex(x.double().reshape(*x.shape[:-1], -1, 2).contiguous())
    freqs_cis = freqs_cis.view(1, x.size(1), 1, x.size(-1))
    return torch.view_as_real(x * freqs_cis).flatten(3).to(dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.n_local_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.qk_nope_head_dim = qk_nope_head_dim
        self.qk_rope_head_dim = qk_rope_head_dim
        self.qk_head_dim = qk_nope_head_dim + qk_rope_head_dim
        self.v_head_dim = v_head_dim
        self.rope_theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * self.qk_head_dim, bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)
        self.softmax_scale = self.kv_lora_rank ** -0.5

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.size()
        start_pos = 0 if cache is None else cache[0].size(1)
        end_pos = start_pos + seqlen
        freqs_cis = precompute_freqs_cis(self.qk_rope_head_dim, end_pos, self.rope_theta, x.device)[start_pos:end_pos]
        q = self.wq_b(self.q_norm(self.wq_a(x)))
        q = q.view(bsz, seqlen, self.n_local_heads, self.qk_head_dim)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)
        kv = self.wkv_a(x)
        kv, k_pe = torch.split(kv, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis)
        kv_cache = self.kv_norm(kv)
        pe_cache = k_pe.squeeze(2)
        if cache is not None:
            kv_cache = torch.cat([cache[0], kv_cache], dim=1)
            pe_cache = torch.cat([cache[1], pe_cache], dim=1)
        wkv_b = self.wkv_b.weight.view(self.n_local_heads, -1, self.kv_lora_rank)
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :self.qk_nope_head_dim])
        scores = (torch.einsum("bshc,btc->bsht", q_nope, kv_cache) +
                  torch.einsum("bshr,btr->bsht", q_pe, pe_cache)) * self.softmax_scale
        mask = torch.full((seqlen, end_pos), float("-inf"), device=x.device).triu_(start_pos + 1)
        scores = scores + mask.unsqueeze(1)
        scores = scores.softmax(dim=-1, dtype=torch.float32).type_as(x)
        x = torch.einsum("bsht,btc->bshc", scores, kv_cache)
        x = torch.einsum("bshc,hdc->bshd", x, wkv_b[:, -self.v_head_dim:])
        return self.wo(x.flatten(2)), (kv_cache, pe_cache)
# bug-line: 55
