# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_post_norm + decoder_rope_wrong_tensors
"""IBM Granite's decoder naming (residual_multiplier = 1.0, self_attn / mlp methods, rotary_emb
returning cos / sin), the norms applied after each residual sum, and RoPE handed the wrong pair."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


def rotary_emb(T, dim, theta, device):
    inv_freq = 1.0 / theta ** (torch.arange(0, dim, 2, device=device, dtype=torch.float32) / dim)
    freqs = torch.outer(torch.arange(T, device=device, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def apply_rotary_pos_emb(t, cos, sin):
    t1, t2 = t.chunk(2, dim=-1)
    return t * cos + torch.cat((-t2, t1), dim=-1) * sin


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_theta = rope_theta
        self.residual_multiplier = 1.0
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def self_attn(self, x, attention_mask):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = rotary_emb(T, self.head_dim, self.rope_theta, x.device)
        q, v = apply_rotary_pos_emb(q, cos, sin), apply_rotary_pos_emb(v, cos, sin)
        n_rep = self.num_heads // self.num_kv_heads
        k, v = k.repeat_interleave(n_rep, dim=1), v.repeat_interleave(n_rep, dim=1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        blocked = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        if attention_mask is not None:
            blocked = blocked | ~attention_mask[:, None, None, :]
        s = s.masked_fill(blocked, float("-inf"))
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))

    def mlp(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))

    def forward(self, x, attention_mask=None):
        h = self.attn_norm(x + self.self_attn(x, attention_mask) * self.residual_multiplier)
        return self.ffn_norm(h + self.mlp(h) * self.residual_multiplier)
# bug-line: 59, 73, 74
