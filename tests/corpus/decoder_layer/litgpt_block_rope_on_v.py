# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_rope_wrong_tensors
"""lit-gpt's Block (norm_1 / attn / norm_2 / mlp, `x = attn(norm_1(x)) + x`) with its LLaMAMLP
(fc_1, fc_2, proj) and its own build_rope_cache / apply_rope; the rotation is applied to q and v."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        norm_x = torch.mean(x * x, dim=-1, keepdim=True)
        return (x * torch.rsqrt(norm_x + self.eps)).to(dtype) * self.weight


def build_rope_cache(seq_len, n_elem, base, device):
    theta = 1.0 / (base ** (torch.arange(0, n_elem, 2, device=device).float() / n_elem))
    idx_theta = torch.outer(torch.arange(seq_len, device=device).float(), theta).repeat(1, 2)
    return torch.cos(idx_theta), torch.sin(idx_theta)


def apply_rope(x, cos, sin):
    head_size = x.size(-1)
    x1 = x[..., : head_size // 2]
    x2 = x[..., head_size // 2 :]
    rotated = torch.cat((-x2, x1), dim=-1)
    return (x * cos + rotated * sin).to(dtype=x.dtype)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.n_head, self.n_query_groups = num_heads, num_kv_heads
        self.head_size = d_model // num_heads
        self.rope_base = rope_theta
        self.norm_1 = RMSNorm(d_model, eps)
        self.q = nn.Linear(d_model, d_model, bias=False)
        self.k = nn.Linear(d_model, num_kv_heads * self.head_size, bias=False)
        self.v = nn.Linear(d_model, num_kv_heads * self.head_size, bias=False)
        self.proj = nn.Linear(d_model, d_model, bias=False)
        self.norm_2 = RMSNorm(d_model, eps)
        self.fc_1 = nn.Linear(d_model, d_ff, bias=False)
        self.fc_2 = nn.Linear(d_model, d_ff, bias=False)
        self.mlp_proj = nn.Linear(d_ff, d_model, bias=False)

    def attn(self, x, mask):
        B, T, C = x.size()
        q = self.q(x).view(B, T, self.n_head, self.head_size).transpose(1, 2)
        k = self.k(x).view(B, T, self.n_query_groups, self.head_size).transpose(1, 2)
        v = self.v(x).view(B, T, self.n_query_groups, self.head_size).transpose(1, 2)
        cos, sin = build_rope_cache(T, self.head_size, self.rope_base, x.device)
        q = apply_rope(q, cos, sin)
        v = apply_rope(v, cos, sin)
        rep = self.n_head // self.n_query_groups
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_size))
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if mask is not None:
            keep = keep & mask[:, None, None, :]
        att = att.masked_fill(~keep, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.proj(y)

    def mlp(self, x):
        return self.mlp_proj(F.silu(self.fc_1(x)) * self.fc_2(x))

    def forward(self, x, attention_mask=None):
        x = self.attn(self.norm_1(x), attention_mask) + x
        x = self.mlp(self.norm_2(x)) + x
        return x
# bug-line: 62
