# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_absorb_rows
"""DeepSeek-V3 inference/model.py, attn_impl "absorb", as a function of its cache; wkv_b's weight is
viewed (nope + v, H, c) and transposed to heads first, which pairs each head with rows of other heads."""

import torch
import torch.nn as nn

def precompute_freqs_cis(dim: int, seqlen: int, theta: float) -> torch.Tensor:
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    t = torch.arange(seqlen)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_emb(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    dtype = x.dtype
    x = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.view(1, x.size(1), 1, x.size(-1))
    y = torch.view_as_real(x * freqs_cis).flatten(3)
    return y.to(dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return (h * self.weight).type_as(x)


class MLADecode(nn.Module):
    def __init__(self, d_model: int, num_heads: int, q_lora_rank: int, kv_lora_rank: int, qk_nope_head_dim: int,
                 qk_rope_head_dim: int, v_head_dim: int, rope_theta: float = 10000.0):
        super().__init__()
        self.n_heads = num_heads
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
        self.softmax_scale = self.qk_head_dim**-0.5

    def forward(self, x: torch.Tensor, cache=None):
        bsz, seqlen, _ = x.size()
        start_pos = 0 if cache is None else cache[0].size(1)
        end_pos = start_pos + seqlen
        freqs_cis = precompute_freqs_cis(self.qk_rope_head_dim, end_pos, self.rope_theta)[start_pos:end_pos].to(x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(bsz, seqlen, self.n_heads, self.qk_head_dim)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)
        kv, k_pe = torch.split(self.wkv_a(x), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        kv = self.kv_norm(kv)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis).squeeze(2)
        if cache is not None:
            kv = torch.cat([cache[0], kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        wkv_b = self.wkv_b.weight.view(self.qk_nope_head_dim + self.v_head_dim, self.n_heads, -1).transpose(0, 1)
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :self.qk_nope_head_dim])
        scores = (torch.einsum("bshc,btc->bsht", q_nope, kv) +
                  torch.einsum("bshr,btr->bsht", q_pe, k_pe)) * self.softmax_scale
        mask = torch.full((seqlen, end_pos), float("-inf"), device=x.device).triu_(start_pos + 1)
        scores = scores + mask.unsqueeze(1)
        scores = scores.softmax(dim=-1, dtype=torch.float32).type_as(x)
        x = torch.einsum("bsht,btc->bshc", scores, kv)
        x = torch.einsum("bshc,hdc->bshd", x, wkv_b[:, -self.v_head_dim:])
        return self.wo(x.flatten(2)), (kv, k_pe)
# bug-line: 71
