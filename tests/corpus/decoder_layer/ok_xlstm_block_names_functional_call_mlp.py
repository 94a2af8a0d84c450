# attnprep: decoder_layer
# expect: passed
"""xLSTM-like block naming (xlstm_norm / ffn_norm, a `ffn` submodule with proj_up_gate / proj_up /
proj_down), the attention as its own submodule, and the feed-forward run through
torch.func.functional_call on its own parameters (as a stateless-module habit)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


class GatedFFN(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.proj_up_gate = nn.Linear(d_model, d_ff, bias=False)
        self.proj_up = nn.Linear(d_model, d_ff, bias=False)
        self.proj_down = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.proj_down(F.silu(self.proj_up_gate(x)) * self.proj_up(x))


class Attention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, theta):
        super().__init__()
        self.h, self.g, self.d, self.theta = num_heads, num_kv_heads, d_model // num_heads, theta
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)

    def rope(self, t):
        T, D = t.shape[-2:]
        inv = 1.0 / self.theta ** (torch.arange(0, D, 2, dtype=torch.float32, device=t.device) / D)
        f = torch.outer(torch.arange(T, dtype=torch.float32, device=t.device), inv)
        f = torch.cat([f, f], -1)
        a, b = t[..., : D // 2], t[..., D // 2 :]
        return (t * f.cos() + torch.cat([-b, a], -1) * f.sin()).to(t.dtype)

    def forward(self, x, mask):
        B, T, C = x.shape
        q = self.rope(self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2))
        k = self.rope(self.k_proj(x).view(B, T, self.g, self.d).transpose(1, 2))
        v = self.v_proj(x).view(B, T, self.g, self.d).transpose(1, 2)
        k = k.repeat_interleave(self.h // self.g, 1)
        v = v.repeat_interleave(self.h // self.g, 1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.d)
        bad = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        if mask is not None:
            bad = bad | ~mask[:, None, None, :]
        s = s.masked_fill(bad, float("-inf"))
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.xlstm_norm = RMSNorm(d_model, eps)
        self.attn = Attention(d_model, num_heads, num_kv_heads, rope_theta)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.ffn = GatedFFN(d_model, d_ff)

    def forward(self, x, attention_mask=None):
        h = x + self.attn(self.xlstm_norm(x), attention_mask)
        ffn_params = dict(self.ffn.named_parameters())
        return h + functional_call(self.ffn, ffn_params, (self.ffn_norm(h),))
