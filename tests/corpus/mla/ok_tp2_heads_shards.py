# attnprep: mla
# expect: passed
"""DeepSeek's ColumnParallelLinear / RowParallelLinear with world_size = 2 simulated: wq_b and
wkv_b split by heads into two column shards, wo into two row shards summed; the down projections
and norms replicated."""
import math
import torch
import torch.nn as nn

WORLD = 2


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float64, device=device), freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x, freqs_cis):
    x_c = torch.view_as_complex(x.to(torch.float64).unflatten(-1, (-1, 2)).contiguous())
    return torch.view_as_real(x_c * freqs_cis[:, None, :]).flatten(-2).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        world = WORLD if num_heads % WORLD == 0 else 1
        self.world, self.h = world, num_heads // world
        self.c, self.nope, self.rope, self.dv, self.theta = (
            kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta)
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        qk = qk_nope_head_dim + qk_rope_head_dim
        self.wq_b = nn.ModuleList(nn.Linear(q_lora_rank, self.h * qk, bias=False) for _ in range(world))
        self.wkv_b = nn.ModuleList(nn.Linear(kv_lora_rank, self.h * (qk_nope_head_dim + v_head_dim), bias=False)
                                   for _ in range(world))
        self.wo = nn.ModuleList(nn.Linear(self.h * v_head_dim, d_model, bias=False) for _ in range(world))

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        h, nope, rope, dv = self.h, self.nope, self.rope, self.dv
        fc = precompute_freqs_cis(rope, T, self.theta, x.device)
        qa = self.q_norm(self.wq_a(x))
        c_kv, k_pe = self.wkv_a(x).split([self.c, rope], -1)
        k_pe = apply_rotary_emb(k_pe[:, :, None], fc)
        c_kv = self.kv_norm(c_kv)
        out = 0
        for r in range(self.world):
            q = self.wq_b[r](qa).view(B, T, h, nope + rope)
            q = torch.cat([q[..., :nope], apply_rotary_emb(q[..., nope:], fc)], -1).transpose(1, 2)
            kv = self.wkv_b[r](c_kv).view(B, T, h, nope + dv)
            k = torch.cat([kv[..., :nope], k_pe.expand(B, T, h, rope)], -1).transpose(1, 2)
            v = kv[..., nope:].transpose(1, 2)
            s = q @ k.transpose(-1, -2) / math.sqrt(nope + rope)
            if attention_mask is not None:
                s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
            if is_causal:
                s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
            out = out + self.wo[r]((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, h * dv))
        return out
