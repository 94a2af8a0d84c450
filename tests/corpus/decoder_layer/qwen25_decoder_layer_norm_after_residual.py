# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_post_norm
"""Qwen2.5's modeling names: Qwen2RMSNorm with `variance_epsilon`, Qwen2Attention with
`num_key_value_groups`, `rotate_half` / `apply_rotary_pos_emb(q, k, cos, sin)`, Qwen2MLP with
gate_proj / up_proj / down_proj, the layer's input_layernorm / post_attention_layernorm. The
forward was written from the original Transformer paper's figure: each norm is applied after its
residual add (post-norm), not to the sub-layer's input."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Qwen2RMSNorm(nn.Module):
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


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.num_heads, self.num_key_value_heads = num_heads, num_kv_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_theta = rope_theta
        self.input_layernorm = Qwen2RMSNorm(d_model, eps=eps)
        self.post_attention_layernorm = Qwen2RMSNorm(d_model, eps=eps)
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model, bias=False)
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def self_attn(self, hidden_states, attention_mask):
        bsz, q_len, _ = hidden_states.shape
        q = self.q_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        v = self.v_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        inv_freq = 1.0 / (self.rope_theta ** (torch.arange(0, self.head_dim, 2, device=q.device).float() / self.head_dim))
        freqs = torch.outer(torch.arange(q_len, device=q.device).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        q, k = apply_rotary_pos_emb(q, k, emb.cos().to(q.dtype), emb.sin().to(q.dtype))
        k = k.repeat_interleave(self.num_key_value_groups, dim=1)
        v = v.repeat_interleave(self.num_key_value_groups, dim=1)
        attn_weights = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        causal = torch.ones(q_len, q_len, dtype=torch.bool, device=q.device).tril()
        allowed = causal if attention_mask is None else causal & attention_mask[:, None, None, :]
        attn_weights = attn_weights.masked_fill(~allowed, torch.finfo(attn_weights.dtype).min)
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
        attn_output = torch.matmul(attn_weights, v).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(attn_output)

    def mlp(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    def forward(self, x, attention_mask=None):
        residual = x
        hidden_states = self.input_layernorm(residual + self.self_attn(x, attention_mask))
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(residual + self.mlp(hidden_states))
        return hidden_states
# bug-line: 82, 84
