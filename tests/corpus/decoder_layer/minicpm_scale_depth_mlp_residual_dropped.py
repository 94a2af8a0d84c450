# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_residual_missing
"""MiniCPM's decoder layer: the residual branches scaled by scale_depth / sqrt(num_hidden_layers)
(muP's depth scaling, both knobs 1 here so the layer is Llama's), MiniCPMRMSNorm, gate / up / down
names, hidden_states and residual threaded as in Hugging Face's modeling_minicpm.py."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MiniCPMRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        old_dtype = hidden_states.dtype
        variance = hidden_states.to(torch.float32).pow(2).mean(dim=-1, keepdim=True)
        hidden_states = (hidden_states * torch.rsqrt(variance + self.variance_epsilon)).to(old_dtype)
        return hidden_states * self.weight


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6,
                 scale_depth=1.0, num_hidden_layers=1):
        super().__init__()
        self.hidden_size = d_model
        self.num_heads = num_heads
        self.num_key_value_heads = num_kv_heads
        self.num_key_value_groups = num_heads // num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_theta = rope_theta
        self.scale_depth = scale_depth
        self.num_hidden_layers = num_hidden_layers
        self.input_layernorm = MiniCPMRMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model, bias=False)
        self.post_attention_layernorm = MiniCPMRMSNorm(d_model, eps)
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def rotary(self, seq_len, device):
        inv_freq = 1.0 / (self.rope_theta ** (torch.arange(0, self.head_dim, 2, device=device).float() / self.head_dim))
        t = torch.arange(seq_len, device=device, dtype=torch.float32)
        emb = torch.cat((torch.outer(t, inv_freq),) * 2, dim=-1)
        return emb.cos(), emb.sin()

    def self_attn(self, hidden_states, attention_mask):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.rotary(q_len, hidden_states.device)
        query_states = query_states * cos + rotate_half(query_states) * sin
        key_states = key_states * cos + rotate_half(key_states) * sin
        key_states = torch.repeat_interleave(key_states, self.num_key_value_groups, dim=1)
        value_states = torch.repeat_interleave(value_states, self.num_key_value_groups, dim=1)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        causal = torch.ones(q_len, q_len, dtype=torch.bool, device=hidden_states.device).tril()
        if attention_mask is not None:
            causal = causal & attention_mask[:, None, None, :]
        attn_weights = attn_weights.masked_fill(~causal, torch.finfo(attn_weights.dtype).min)
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).reshape(bsz, q_len, self.hidden_size)
        return self.o_proj(attn_output)

    def mlp(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    def forward(self, x, attention_mask=None):
        residual = x
        hidden_states = self.input_layernorm(x)
        hidden_states = self.self_attn(hidden_states, attention_mask)
        hidden_states = residual + hidden_states * (self.scale_depth / math.sqrt(self.num_hidden_layers))
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = hidden_states * (self.scale_depth / math.sqrt(self.num_hidden_layers))
        return hidden_states
# bug-line: 90
