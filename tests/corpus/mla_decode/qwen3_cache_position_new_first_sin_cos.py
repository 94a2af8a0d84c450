# attnprep: mla_decode
# expect: wrong_output
# diagnosis: cache_prepended + rope_cos_sin_swapped
"""Qwen3 modeling names on the absorbed MLA decode: `past_key_value`, `cache_position =
torch.arange(past_seen_tokens, past_seen_tokens + T)`, a `Qwen3RotaryEmbedding`-like module that
returns `(cos, sin)` for position ids, `self.scaling`, and an interleaved `apply_rotary_pos_emb`
helper. Two slips: the helper unpacks the module's result as (sin, cos), and the cache update
puts the new tokens before the cached ones."""

import torch
import torch.nn as nn


class Qwen3RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class Qwen3RotaryEmbedding(nn.Module):
    def __init__(self, dim, base):
        super().__init__()
        self.dim, self.base = dim, base

    def forward(self, position_ids):
        inv_freq = 1.0 / (self.base ** (torch.arange(0, self.dim, 2, dtype=torch.float32, device=position_ids.device) / self.dim))
        freqs = position_ids.float()[:, None] * inv_freq[None, :]  # (T, dim/2)
        return freqs.cos(), freqs.sin()


def apply_rotary_pos_emb(x, position_embeddings):
    sin, cos = position_embeddings
    shape = (1, x.shape[1]) + (1,) * (x.dim() - 3) + (x.shape[-1] // 2,)
    cos, sin = cos.view(shape), sin.view(shape)
    x1, x2 = x.float()[..., 0::2], x.float()[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2).to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_heads, self.kv_lora_rank = num_heads, kv_lora_rank
        self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.scaling = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5
        self.rotary_emb = Qwen3RotaryEmbedding(qk_rope_head_dim, rope_theta)
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = Qwen3RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = Qwen3RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, cache=None):
        past_key_value = cache
        bsz, q_len, _ = x.shape
        H, dn, dr, dv = self.num_heads, self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim
        past_seen_tokens = 0 if past_key_value is None else past_key_value[0].shape[1]
        cache_position = torch.arange(past_seen_tokens, past_seen_tokens + q_len, device=x.device)
        position_embeddings = self.rotary_emb(cache_position)

        query_states = self.wq_b(self.q_norm(self.wq_a(x))).view(bsz, q_len, H, dn + dr)
        q_nope, q_pe = torch.split(query_states, [dn, dr], dim=-1)
        q_pe = apply_rotary_pos_emb(q_pe, position_embeddings)
        compressed_kv, k_pe = torch.split(self.wkv_a(x), [self.kv_lora_rank, dr], dim=-1)
        compressed_kv = self.kv_norm(compressed_kv)
        k_pe = apply_rotary_pos_emb(k_pe, position_embeddings)
        if past_key_value is not None:
            compressed_kv = torch.cat([compressed_kv, past_key_value[0]], dim=1)
            k_pe = torch.cat([k_pe, past_key_value[1]], dim=1)
        kv_len = compressed_kv.shape[1]

        wkv_b = self.wkv_b.weight.view(H, dn + dv, self.kv_lora_rank)
        q_absorbed = torch.einsum("bqhd,hdc->bqhc", q_nope, wkv_b[:, :dn])
        attn_weights = torch.einsum("bqhc,bkc->bhqk", q_absorbed, compressed_kv)
        attn_weights = (attn_weights + torch.einsum("bqhr,bkr->bhqk", q_pe, k_pe)) * self.scaling
        causal = cache_position[:, None] >= torch.arange(kv_len, device=x.device)[None, :]
        attn_weights = attn_weights.masked_fill(~causal, torch.finfo(attn_weights.dtype).min)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(x.dtype)
        attn_output = torch.einsum("bhqk,bkc->bqhc", attn_weights, compressed_kv)
        attn_output = torch.einsum("bqhc,hdc->bqhd", attn_output, wkv_b[:, dn:]).reshape(bsz, q_len, H * dv)
        return self.wo(attn_output), (compressed_kv, k_pe)
# bug-line: 40, 78, 79
