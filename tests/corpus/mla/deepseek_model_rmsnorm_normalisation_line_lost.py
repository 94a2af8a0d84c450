# attnprep: mla
# expect: wrong_output
# diagnosis:
"""DeepSeek-V3 model.py's names as in ok_deepseek_model_where, its RMSNorm typed from memory: the float upcast
and the gain, the normalisation line itself lost (q_norm and kv_norm both run it)."""

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
        return (h * self.weight).type_as(x)


class MultiHeadLatentAttention(nn.Module):
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
        self.wq_b = nn.Linear(q_lora_rank, self.n_heads * self.qk_head_dim, bias=False)
        self.wkv_a = nn.Linear(d_model, self.kv_lora_rank + self.qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(self.kv_lora_rank)
        self.wkv_b = nn.Linear(self.kv_lora_rank, self.n_heads * (self.qk_nope_head_dim + self.v_head_dim), bias=False)
        self.wo = nn.Linear(self.n_heads * self.v_head_dim, d_model, bias=False)
        self.softmax_scale = self.qk_head_dim**-0.5

    def forward(self, x: torch.Tensor, attention_mask=None, is_causal: bool = False):
        bsz, seqlen, _ = x.size()
        freqs_cis = precompute_freqs_cis(self.qk_rope_head_dim, seqlen, self.rope_theta).to(x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(bsz, seqlen, self.n_heads, self.qk_head_dim)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)
        kv, k_pe = torch.split(self.wkv_a(x), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis)
        q = torch.cat([q_nope, q_pe], dim=-1)
        kv = self.wkv_b(self.kv_norm(kv)).view(bsz, seqlen, self.n_heads, self.qk_nope_head_dim + self.v_head_dim)
        k_nope, v = torch.split(kv, [self.qk_nope_head_dim, self.v_head_dim], dim=-1)
        k = torch.cat([k_nope, k_pe.expand(-1, -1, self.n_heads, -1)], dim=-1)
        scores = torch.einsum("bshd,bthd->bsht", q, k) * self.softmax_scale
        keep = torch.ones(bsz, seqlen, seqlen, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep & torch.ones(seqlen, seqlen, dtype=torch.bool, device=x.device).tril()
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, :]
        scores = torch.where(keep.unsqueeze(2), scores, float("-inf"))
        scores = scores.softmax(dim=-1, dtype=torch.float32).type_as(x)
        x = torch.einsum("bsht,bthd->bshd", scores, v)
        return self.wo(x.flatten(2))
# bug-line: 33
