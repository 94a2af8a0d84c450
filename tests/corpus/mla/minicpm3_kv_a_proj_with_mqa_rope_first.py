# attnprep: mla
# expect: wrong_output
# diagnosis: mla_split_order
"""MiniCPM3's MLA naming (q_a_proj, q_a_layernorm, q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm,
kv_b_proj, o_proj), its own RMSNorm class, the stub's DeepSeek RoPE helpers kept as given."""
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


class MiniCPMRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        dtype = hidden_states.dtype
        h = hidden_states.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.qk_nope_head_dim = qk_nope_head_dim
        self.qk_rope_head_dim = qk_rope_head_dim
        self.q_head_dim = qk_nope_head_dim + qk_rope_head_dim
        self.v_head_dim = v_head_dim
        self.rope_theta = rope_theta
        self.q_a_proj = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_a_layernorm = MiniCPMRMSNorm(q_lora_rank)
        self.q_b_proj = nn.Linear(q_lora_rank, num_heads * self.q_head_dim, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_a_layernorm = MiniCPMRMSNorm(kv_lora_rank)
        self.kv_b_proj = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.o_proj = nn.Linear(num_heads * v_head_dim, d_model, bias=False)
        self.softmax_scale = self.q_head_dim ** (-0.5)

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, q_len, _ = x.size()
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))
        q = q.view(bsz, q_len, self.num_heads, self.q_head_dim)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)

        compressed_kv = self.kv_a_proj_with_mqa(x)
        k_pe, compressed_kv = torch.split(compressed_kv, [self.qk_rope_head_dim, self.kv_lora_rank], dim=-1)
        kv = self.kv_b_proj(self.kv_a_layernorm(compressed_kv))
        kv = kv.view(bsz, q_len, self.num_heads, self.qk_nope_head_dim + self.v_head_dim)
        k_nope, value_states = torch.split(kv, [self.qk_nope_head_dim, self.v_head_dim], dim=-1)

        freqs_cis = precompute_freqs_cis(self.qk_rope_head_dim, q_len, self.rope_theta, device=x.device)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)
        k_pe = apply_rotary_emb(k_pe[:, :, None, :], freqs_cis)

        query_states = torch.cat([q_nope, q_pe], dim=-1).transpose(1, 2)
        key_states = torch.cat([k_nope, k_pe.expand(-1, -1, self.num_heads, -1)], dim=-1).transpose(1, 2)
        value_states = value_states.transpose(1, 2)

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.softmax_scale
        if is_causal:
            future = torch.ones(q_len, q_len, dtype=torch.bool, device=x.device).triu(1)
            attn_weights = attn_weights.masked_fill(future, float("-inf"))
        if attention_mask is not None:
            attn_weights = attn_weights.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(x.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, self.num_heads * self.v_head_dim)
        return self.o_proj(attn_output)
# bug-line: 65
