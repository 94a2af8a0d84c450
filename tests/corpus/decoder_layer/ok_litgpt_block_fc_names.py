# attnprep: decoder_layer
# expect: passed
"""Correct: litgpt's Block: norm_1 / norm_2 RMSNorms, attn.attn fused of (n_head + 2 * n_query_groups)
* head_size split by sizes, attn.proj, mlp = LLaMAMLP with fc_1 (gate), fc_2 (up) and proj (down),
RoPE by build_rope_cache / apply_rope on (B, nh, T, hs), GQA by expand to the query heads."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, size, dim=-1, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps, self.dim = eps, dim

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        norm_x = torch.mean(x * x, dim=self.dim, keepdim=True)
        return (x * torch.rsqrt(norm_x + self.eps)).to(dtype) * self.weight


def build_rope_cache(seq_len, n_elem, device, base=10000.0):
    theta = 1.0 / (base ** (torch.arange(0, n_elem, 2, device=device).float() / n_elem))
    seq_idx = torch.arange(seq_len, device=device).float()
    idx_theta = torch.outer(seq_idx, theta).repeat(1, 2)
    return torch.cos(idx_theta), torch.sin(idx_theta)


def apply_rope(x, cos, sin):
    head_size = x.size(-1)
    x1 = x[..., : head_size // 2]
    x2 = x[..., head_size // 2:]
    rotated = torch.cat((-x2, x1), dim=-1)
    return ((x * cos) + (rotated * sin)).to(dtype=x.dtype)


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, n_query_groups, rope_base):
        super().__init__()
        self.n_head, self.n_query_groups = n_head, n_query_groups
        self.head_size = n_embd // n_head
        self.rope_base = rope_base
        self.attn = nn.Linear(n_embd, (n_head + 2 * n_query_groups) * self.head_size, bias=False)
        self.proj = nn.Linear(n_head * self.head_size, n_embd, bias=False)

    def forward(self, x, mask):
        B, T, C = x.size()
        hs = self.head_size
        q, k, v = self.attn(x).split((self.n_head * hs, self.n_query_groups * hs, self.n_query_groups * hs), dim=-1)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)
        k = k.view(B, T, self.n_query_groups, hs).transpose(1, 2)
        v = v.view(B, T, self.n_query_groups, hs).transpose(1, 2)
        cos, sin = build_rope_cache(T, hs, x.device, self.rope_base)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if self.n_query_groups != self.n_head:
            rep = self.n_head // self.n_query_groups
            k = k.unsqueeze(2).expand(-1, -1, rep, -1, -1).reshape(B, self.n_head, T, hs)
            v = v.unsqueeze(2).expand(-1, -1, rep, -1, -1).reshape(B, self.n_head, T, hs)
        att = (q @ k.mT) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(~mask, torch.finfo(att.dtype).min)
        y = att.softmax(-1) @ v
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class LLaMAMLP(nn.Module):
    def __init__(self, n_embd, intermediate_size):
        super().__init__()
        self.fc_1 = nn.Linear(n_embd, intermediate_size, bias=False)
        self.fc_2 = nn.Linear(n_embd, intermediate_size, bias=False)
        self.proj = nn.Linear(intermediate_size, n_embd, bias=False)

    def forward(self, x):
        return self.proj(F.silu(self.fc_1(x)) * self.fc_2(x))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.norm_1 = RMSNorm(d_model, eps=eps)
        self.attn = CausalSelfAttention(d_model, num_heads, num_kv_heads, rope_theta)
        self.norm_2 = RMSNorm(d_model, eps=eps)
        self.mlp = LLaMAMLP(d_model, d_ff)

    def forward(self, x, attention_mask=None):
        B, T, _ = x.shape
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()[None, None]
        if attention_mask is not None:
            mask = mask & attention_mask[:, None, None, :]
        x = x + self.attn(self.norm_1(x), mask)
        return x + self.mlp(self.norm_2(x))
