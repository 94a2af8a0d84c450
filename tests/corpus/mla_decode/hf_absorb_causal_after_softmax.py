# attnprep: mla_decode
# expect: mask_leak
# diagnosis: mask_after_softmax
# Hugging Face names, absorbed decode: the causal mask zeroes the probabilities after the softmax.
"""Hugging Face naming (q_a_proj, q_a_layernorm, q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj), position_ids from the cache length, the HF interleave-then-rotate_half RoPE, kv_b_proj.weight.unflatten(0, (H, -1)), additive finfo.min mask."""
import torch
import torch.nn as nn


class DeepseekV3RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        dtype = hidden_states.dtype
        hidden_states = hidden_states.float()
        hidden_states = hidden_states * torch.rsqrt(hidden_states.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * hidden_states.to(dtype)


def rotate_half(x):
    return torch.cat((-x[..., x.shape[-1] // 2:], x[..., : x.shape[-1] // 2]), dim=-1)


def apply_interleave(x, cos, sin):  # x (B, T, [H,] r), cos/sin (T, r)
    if x.dim() == 4:
        cos, sin = cos[:, None], sin[:, None]
    x = x.unflatten(-1, (-1, 2)).transpose(-1, -2).flatten(-2)
    return x * cos + rotate_half(x) * sin


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_heads, self.kv_lora_rank = num_heads, kv_lora_rank
        self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.q_a_proj = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_a_layernorm = DeepseekV3RMSNorm(q_lora_rank)
        self.q_b_proj = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_a_layernorm = DeepseekV3RMSNorm(kv_lora_rank)
        self.kv_b_proj = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.o_proj = nn.Linear(num_heads * v_head_dim, d_model, bias=False)
        inv_freq = 1.0 / (rope_theta ** (torch.arange(0, qk_rope_head_dim, 2, dtype=torch.int64).float() / qk_rope_head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.scaling = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5

    def forward(self, x, cache=None):
        bsz, q_len, _ = x.shape
        past_len = 0 if cache is None else cache[0].shape[1]
        position_ids = torch.arange(past_len, past_len + q_len, device=x.device)
        freqs = torch.outer(position_ids.float(), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x))).view(bsz, q_len, self.num_heads, -1)
        q_nope, q_pe = q.split([self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_pe = apply_interleave(q_pe, cos, sin)
        compressed_kv, k_pe = self.kv_a_proj_with_mqa(x).split([self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        compressed_kv = self.kv_a_layernorm(compressed_kv)
        k_pe = apply_interleave(k_pe, cos, sin)
        # cache the de-interleaved k_pe? no: store it in DeepSeek's interleaved order, as the contract says
        k_pe = k_pe.unflatten(-1, (2, -1)).transpose(-1, -2).flatten(-2)
        q_pe = q_pe.unflatten(-1, (2, -1)).transpose(-1, -2).flatten(-2)
        if cache is not None:
            compressed_kv = torch.cat([cache[0], compressed_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        kv_len = compressed_kv.shape[1]
        w = self.kv_b_proj.weight.unflatten(0, (self.num_heads, -1))  # (H, nope + v, c)
        q_absorbed = torch.einsum("bqhd,hdc->bhqc", q_nope, w[:, : self.qk_nope_head_dim])
        attn = torch.einsum("bhqc,bkc->bhqk", q_absorbed, compressed_kv)
        attn = attn + torch.einsum("bqhr,bkr->bhqk", q_pe, k_pe)
        attn = attn * self.scaling
        causal = torch.arange(kv_len, device=x.device)[None, :] > position_ids[:, None]
        attn = nn.functional.softmax(attn, dim=-1, dtype=torch.float32).to(x.dtype)
        attn = attn.masked_fill(causal, 0.0)
        o = torch.einsum("bhqk,bkc->bhqc", attn, compressed_kv)
        o = torch.einsum("bhqc,hdc->bqhd", o, w[:, self.qk_nope_head_dim:])
        return self.o_proj(o.reshape(bsz, q_len, -1)), (compressed_kv, k_pe)
