# attnprep: mla
# expect: wrong_output
# diagnosis: mla_norm_skipped
"""A Pipeline class with __call__ that runs its stages in order (for f in self.stages), the query
and latent paths built as Pipelines in forward; DeepSeek's interleaved RoPE on cos / sin tables."""
import torch
import torch.nn as nn


class Pipeline:
    def __init__(self, *stages):
        self.stages = stages

    def __call__(self, x):
        for f in self.stages:
            x = f(x)
        return x


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)


def rope(x, theta):
    T, r = x.shape[1], x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, r, 2, device=x.device, dtype=torch.float32) / r)
    ang = torch.arange(T, device=x.device, dtype=torch.float32)[:, None] * inv
    c, s = ang.cos()[None, :, None], ang.sin()[None, :, None]
    a, b = x.float()[..., 0::2], x.float()[..., 1::2]
    return torch.stack((a * c - b * s, a * s + b * c), -1).flatten(-2).type_as(x)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.C, self.N, self.R, self.V = num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        query = Pipeline(self.wq_a, self.wq_b)
        latent = Pipeline(self.kv_norm, self.wkv_b)
        q = query(x).view(B, T, self.H, self.N + self.R)
        q_nope, q_pe = q.split([self.N, self.R], -1)
        c_kv, k_pe = self.wkv_a(x).split([self.C, self.R], -1)
        k_nope, v = latent(c_kv).view(B, T, self.H, self.N + self.V).split([self.N, self.V], -1)
        q = torch.cat([q_nope, rope(q_pe, self.theta)], -1).transpose(1, 2)
        k_pe = rope(k_pe[:, :, None], self.theta).expand(B, T, self.H, self.R)
        k = torch.cat([k_nope, k_pe], -1).transpose(1, 2)
        s = q @ k.transpose(-1, -2) * (self.N + self.R) ** -0.5
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep.tril()
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        o = s.masked_fill(~keep, float("-inf")).softmax(-1) @ v.transpose(1, 2)
        return self.wo(o.transpose(1, 2).reshape(B, T, self.H * self.V))
# bug-line: 56
