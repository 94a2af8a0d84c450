# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_rope_before_split
"""modded-nanogpt (the NanoGPT speedrun) habits: CastedLinear (F.linear with the weight cast to the
input's dtype), a Rotary module that precomputes cos / sin buffers in __init__ and slices them to the
sequence, `norm()` helpers, the block as `x = x + self.attn(norm(x))`. Llama's pieces where the
contract wants them (RMSNorm gains, SwiGLU, grouped KV heads, rotate-half). The rotary is applied to
the projected q and k before they are viewed into heads, over the whole projected width."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CastedLinear(nn.Linear):
    def __init__(self, in_features, out_features):
        super().__init__(in_features, out_features, bias=False)

    def forward(self, x):
        return F.linear(x, self.weight.type_as(x))


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        y = x.float()
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
        return y.type_as(x) * self.weight


class Rotary(nn.Module):
    def __init__(self, dim, base, max_seq_len=1024):
        super().__init__()
        inv_freq = (1 / base) ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
        t = torch.arange(max_seq_len, dtype=torch.float32)
        theta = torch.outer(t, inv_freq)
        self.register_buffer("cos", theta.cos(), persistent=False)
        self.register_buffer("sin", theta.sin(), persistent=False)

    def forward(self, x):  # x (..., T, dim): rotate-half, halves x1 / x2
        T = x.size(-2)
        cos, sin = self.cos[:T].to(x.device), self.sin[:T].to(x.device)
        x1, x2 = x.float().chunk(2, dim=-1)
        y1 = x1 * cos - x2 * sin
        y2 = x2 * cos + x1 * sin
        return torch.cat((y1, y2), dim=-1).type_as(x)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.attn_norm = RMSNorm(d_model, eps)
        self.q_proj = CastedLinear(d_model, d_model)
        self.k_proj = CastedLinear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = CastedLinear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = CastedLinear(d_model, d_model)
        self.rotary = Rotary(self.head_dim, rope_theta)
        self.rotary_q = Rotary(d_model, rope_theta)
        self.rotary_k = Rotary(num_kv_heads * self.head_dim, rope_theta)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.w1 = CastedLinear(d_model, d_ff)
        self.w3 = CastedLinear(d_model, d_ff)
        self.w2 = CastedLinear(d_ff, d_model)

    def attn(self, x, attention_mask):
        B, T, _ = x.shape
        H, G, D = self.num_heads, self.num_kv_heads, self.head_dim
        q, k = self.rotary_q(self.q_proj(x)), self.rotary_k(self.k_proj(x))
        q = q.view(B, T, H, D).transpose(1, 2)
        k = k.view(B, T, G, D).transpose(1, 2)
        v = self.v_proj(x).view(B, T, G, D).transpose(1, 2)
        k = k.repeat_interleave(H // G, dim=1)
        v = v.repeat_interleave(H // G, dim=1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        att = att.masked_fill(~keep, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, H * D)
        return self.o_proj(y)

    def mlp(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))

    def forward(self, x, attention_mask=None):
        x = x + self.attn(self.attn_norm(x), attention_mask)
        x = x + self.mlp(self.ffn_norm(x))
        return x
# bug-line: 76, 77, 78
