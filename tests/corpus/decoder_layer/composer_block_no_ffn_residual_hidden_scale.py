# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_residual_missing + scale_d_model
"""llm-foundry's MPTBlock shape (norm_1 / attn / norm_2 / ffn, `resid_ffn_dropout`) with Llama's
pieces; two slips: the FFN's output replaces the hidden state instead of being added to it, and the
softmax_scale defaults to 1/sqrt(d_model) as in a config that forgot to divide by n_heads."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(d))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotary(x, theta):
    T, D = x.shape[-2], x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, D, 2, device=x.device, dtype=torch.float32) / D)
    f = torch.outer(torch.arange(T, device=x.device, dtype=torch.float32), inv)
    cos, sin = torch.cat([f, f], -1).cos().to(x.dtype), torch.cat([f, f], -1).sin().to(x.dtype)
    x1, x2 = x.chunk(2, -1)
    return x * cos + torch.cat([-x2, x1], -1) * sin


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.d_model, self.n_heads, self.kv_n_heads = d_model, num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.softmax_scale = 1 / math.sqrt(self.d_model)
        self.theta = rope_theta
        self.norm_1 = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.norm_2 = RMSNorm(d_model, eps)
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)
        self.resid_ffn_dropout = nn.Dropout(0.0)

    def attn(self, x, attention_mask):
        b, s, _ = x.shape
        q = rotary(self.q_proj(x).view(b, s, self.n_heads, self.head_dim).transpose(1, 2), self.theta)
        k = rotary(self.k_proj(x).view(b, s, self.kv_n_heads, self.head_dim).transpose(1, 2), self.theta)
        v = self.v_proj(x).view(b, s, self.kv_n_heads, self.head_dim).transpose(1, 2)
        rep = self.n_heads // self.kv_n_heads
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        w = (q @ k.transpose(-1, -2)) * self.softmax_scale
        bias = torch.zeros(s, s, device=x.device, dtype=w.dtype).masked_fill(
            torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1), torch.finfo(w.dtype).min)
        w = w + bias
        if attention_mask is not None:
            w = w.masked_fill(~attention_mask[:, None, None, :], torch.finfo(w.dtype).min)
        return self.o_proj((w.softmax(-1) @ v).transpose(1, 2).reshape(b, s, self.d_model))

    def forward(self, x, attention_mask=None):
        a = self.norm_1(x)
        x = x + self.attn(a, attention_mask)
        m = self.norm_2(x)
        n = self.down_proj(F.silu(self.gate_proj(m)) * self.up_proj(m))
        x = self.resid_ffn_dropout(n)
        return x
# bug-line: 38, 71
