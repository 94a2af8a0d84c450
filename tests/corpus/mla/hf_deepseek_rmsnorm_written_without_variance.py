# attnprep: mla
# expect: wrong_output
# diagnosis:
"""Hugging Face DeepseekV3Attention's names as in ok_hf_deepseek_v3_names_head_loop, its RMSNorm written from
memory: the upcast and the gain kept, the variance and its rsqrt left out (both norms run it)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class DeepseekV3RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        return self.weight * hidden_states.to(input_dtype)


def rope_interleaved(x, theta):
    """x (B, T, ..., r): pairs (x[2i], x[2i+1]) rotated by t * theta^(-2i/r)."""
    T, r = x.shape[1], x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, r, 2, device=x.device, dtype=torch.float32) / r)
    ang = torch.outer(torch.arange(T, device=x.device, dtype=torch.float32), inv)   # (T, r/2)
    shape = (1, T) + (1,) * (x.dim() - 3) + (r // 2,)
    c, s = ang.cos().view(shape), ang.sin().view(shape)
    a, b = x[..., 0::2].float(), x[..., 1::2].float()
    return torch.stack((a * c - b * s, a * s + b * c), -1).flatten(-2).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    """Hugging Face DeepseekV3Attention names (q_a_proj, q_a_layernorm, kv_a_proj_with_mqa …), one head at a time."""

    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.qk_head_dim = qk_nope_head_dim + qk_rope_head_dim
        self.kv_lora_rank = kv_lora_rank
        self.rope_theta = rope_theta
        self.scaling = self.qk_head_dim ** (-0.5)
        self.q_a_proj = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_a_layernorm = DeepseekV3RMSNorm(q_lora_rank)
        self.q_b_proj = nn.Linear(q_lora_rank, num_heads * self.qk_head_dim, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_a_layernorm = DeepseekV3RMSNorm(kv_lora_rank)
        self.kv_b_proj = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.o_proj = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x))).view(B, T, self.num_heads, self.qk_head_dim)
        compressed_kv = self.kv_a_proj_with_mqa(x)
        k_pass, k_rot = torch.split(compressed_kv, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        k_rot = rope_interleaved(k_rot, self.rope_theta)                          # (B, T, rope)
        kv = self.kv_b_proj(self.kv_a_layernorm(k_pass)).view(B, T, self.num_heads, -1)
        keep = torch.ones(B, T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, :]
        heads = []
        for h in range(self.num_heads):
            q_nope, q_rot = q[:, :, h].split([self.qk_nope_head_dim, self.qk_rope_head_dim], -1)
            q_rot = rope_interleaved(q_rot, self.rope_theta)
            k_nope, v = kv[:, :, h].split([self.qk_nope_head_dim, self.v_head_dim], -1)
            w = (q_nope @ k_nope.transpose(1, 2) + q_rot @ k_rot.transpose(1, 2)) * self.scaling   # (B, T, T)
            w = w.masked_fill(~keep, torch.finfo(w.dtype).min)
            heads.append(F.softmax(w, dim=-1, dtype=torch.float32).to(v.dtype) @ v)
        return self.o_proj(torch.cat(heads, dim=-1))
# bug-line: 22
