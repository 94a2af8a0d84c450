# attnprep: mla
# expect: wrong_output
# diagnosis: rope_rotate_half
"""HF DeepSeek names and cos/sin from cat((freqs, freqs)), but the plain Llama apply_rotary_pos_emb (no de-interleave): the rotate-half pairing."""
import torch
import torch.nn as nn


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_heads, self.kv_lora_rank = num_heads, kv_lora_rank
        self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.qk_head_dim = qk_nope_head_dim + qk_rope_head_dim
        self.q_a_proj = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_a_layernorm = nn.RMSNorm(q_lora_rank, eps=1e-6)
        self.q_b_proj = nn.Linear(q_lora_rank, num_heads * self.qk_head_dim, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_a_layernorm = nn.RMSNorm(kv_lora_rank, eps=1e-6)
        self.kv_b_proj = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.o_proj = nn.Linear(num_heads * v_head_dim, d_model, bias=False)
        inv_freq = 1.0 / (rope_theta ** (torch.arange(0, qk_rope_head_dim, 2).float() / qk_rope_head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        freqs = torch.outer(torch.arange(T, device=x.device).float(), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x))).view(B, T, -1, self.qk_head_dim).transpose(1, 2)
        q_pass, q_rot = q.split([self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        k_pass, k_rot = self.kv_a_proj_with_mqa(x).split([self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        kv = self.kv_b_proj(self.kv_a_layernorm(k_pass)).view(B, T, -1, self.qk_nope_head_dim + self.v_head_dim).transpose(1, 2)
        k_pass, v = kv.split([self.qk_nope_head_dim, self.v_head_dim], dim=-1)
        k_rot = k_rot.view(B, 1, T, self.qk_rope_head_dim)
        q_rot = q_rot * cos + rotate_half(q_rot) * sin
        k_rot = k_rot * cos + rotate_half(k_rot) * sin
        q = torch.cat((q_pass, q_rot), dim=-1)
        k = torch.cat((k_pass, k_rot.expand(*k_pass.shape[:-1], -1)), dim=-1)
        w = q @ k.transpose(2, 3) * self.qk_head_dim ** -0.5
        if is_causal:
            w = w.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), torch.finfo(w.dtype).min)
        if attention_mask is not None:
            w = w.masked_fill(~attention_mask[:, None, None, :], torch.finfo(w.dtype).min)
        w = w.softmax(-1, dtype=torch.float32).to(q.dtype)
        return self.o_proj((w @ v).transpose(1, 2).reshape(B, T, -1))
# bug-line: 41, 42
