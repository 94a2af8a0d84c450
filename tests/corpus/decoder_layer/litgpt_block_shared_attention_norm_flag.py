# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_shared_norm
"""Lightning litgpt's Block: norm_1 / attn / norm_2 / mlp, the config flags `parallel_residual`
and `shared_attention_norm` read in forward (the Falcon-era branches), `n_query_groups`,
`rope_n_elem`, a CausalSelfAttention with its own `build_rope_cache`, LLaMAMLP's fc_1 / fc_2 /
proj names."""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    n_embd: int
    n_head: int
    n_query_groups: int
    intermediate_size: int
    rope_base: float = 10000.0
    norm_eps: float = 1e-6
    parallel_residual: bool = False
    shared_attention_norm: bool = True

    @property
    def head_size(self):
        return self.n_embd // self.n_head


class RMSNorm(nn.Module):
    def __init__(self, size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        norm_x = torch.mean(xf * xf, dim=-1, keepdim=True)
        return (xf * torch.rsqrt(norm_x + self.eps)).to(x.dtype) * self.weight


def build_rope_cache(seq_len, n_elem, base, device):
    theta = 1.0 / (base ** (torch.arange(0, n_elem, 2, device=device).float() / n_elem))
    idx_theta = torch.outer(torch.arange(seq_len, device=device).float(), theta).repeat(1, 2)
    return torch.cos(idx_theta), torch.sin(idx_theta)


def apply_rope(x, cos, sin):
    head_size = x.size(-1)
    x1, x2 = x[..., : head_size // 2], x[..., head_size // 2 :]
    rotated = torch.cat((-x2, x1), dim=-1)
    return (x * cos + rotated * sin).to(x.dtype)


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        hs = config.head_size
        self.q_proj = nn.Linear(config.n_embd, config.n_head * hs, bias=False)
        self.k_proj = nn.Linear(config.n_embd, config.n_query_groups * hs, bias=False)
        self.v_proj = nn.Linear(config.n_embd, config.n_query_groups * hs, bias=False)
        self.proj = nn.Linear(config.n_head * hs, config.n_embd, bias=False)

    def forward(self, x, mask):
        B, T, C = x.size()
        c, hs = self.config, self.config.head_size
        q = self.q_proj(x).view(B, T, c.n_head, hs).transpose(1, 2)
        k = self.k_proj(x).view(B, T, c.n_query_groups, hs).transpose(1, 2)
        v = self.v_proj(x).view(B, T, c.n_query_groups, hs).transpose(1, 2)
        cos, sin = build_rope_cache(T, hs, c.rope_base, x.device)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        q_per_kv = c.n_head // c.n_query_groups
        k = k.repeat_interleave(q_per_kv, dim=1)
        v = v.repeat_interleave(q_per_kv, dim=1)
        att = (q @ k.mT) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(~mask, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class LLaMAMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc_1 = nn.Linear(config.n_embd, config.intermediate_size, bias=False)
        self.fc_2 = nn.Linear(config.n_embd, config.intermediate_size, bias=False)
        self.proj = nn.Linear(config.intermediate_size, config.n_embd, bias=False)

    def forward(self, x):
        return self.proj(F.silu(self.fc_1(x)) * self.fc_2(x))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.config = config = Config(d_model, num_heads, num_kv_heads, d_ff, rope_theta, eps)
        self.norm_1 = RMSNorm(config.n_embd, eps=config.norm_eps)
        self.attn = CausalSelfAttention(config)
        self.norm_2 = RMSNorm(config.n_embd, eps=config.norm_eps)
        self.mlp = LLaMAMLP(config)

    def forward(self, x, attention_mask=None):
        B, T, _ = x.shape
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()[None, None]
        if attention_mask is not None:
            mask = mask & attention_mask[:, None, None, :]
        x_normed = self.norm_1(x)
        attention_output = self.attn(x_normed, mask)
        if self.config.parallel_residual:
            x_normed = x_normed if self.config.shared_attention_norm else self.norm_2(x)
            return self.mlp(x_normed) + attention_output + x
        x = attention_output + x
        x = self.mlp((self.norm_1 if self.config.shared_attention_norm else self.norm_2)(x)) + x
        return x
# bug-line: 25
