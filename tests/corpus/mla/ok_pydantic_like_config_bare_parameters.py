# attnprep: mla
# expect: passed
"""A pydantic-like config (a tiny BaseModel shim that checks field types from the annotations and
derives qk_head_dim in a validator), every weight a bare nn.Parameter used with F.linear, the two norm
gains 1-D parameters, DeepSeek's complex RoPE."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class BaseModel:
    def __init__(self, **data):
        for name, typ in type(self).__annotations__.items():
            value = data.get(name, getattr(type(self), name, None))
            if not isinstance(value, typ):
                raise TypeError(f"{name}: expected {typ.__name__}, got {value!r}")
            setattr(self, name, value)
        self.model_post_init()

    def model_post_init(self):
        pass


class MLAConfig(BaseModel):
    d_model: int
    num_heads: int
    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    rope_theta: float = 10000.0
    norm_eps: float = 1e-6

    def model_post_init(self):
        self.qk_head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim


def precompute_freqs_cis(dim, seq_len, theta=10000.0, device=None):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    t = torch.arange(seq_len, dtype=torch.float64, device=device)
    angles = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x, freqs_cis):
    pairs = x.to(torch.float64).unflatten(-1, (-1, 2)).contiguous()
    y = torch.view_as_complex(pairs) * freqs_cis[:, None, :]
    return torch.view_as_real(y).flatten(-2).to(x.dtype)


def rms_norm(x, gain, eps):
    h = x.float()
    return gain * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        c = self.cfg = MLAConfig(d_model=d_model, num_heads=num_heads, q_lora_rank=q_lora_rank,
                                 kv_lora_rank=kv_lora_rank, qk_nope_head_dim=qk_nope_head_dim,
                                 qk_rope_head_dim=qk_rope_head_dim, v_head_dim=v_head_dim,
                                 rope_theta=float(rope_theta))

        def mat(out_f, in_f):
            return nn.Parameter(torch.randn(out_f, in_f) / math.sqrt(in_f))

        self.wq_a = mat(c.q_lora_rank, c.d_model)
        self.q_norm = nn.Parameter(torch.ones(c.q_lora_rank))
        self.wq_b = mat(c.num_heads * c.qk_head_dim, c.q_lora_rank)
        self.wkv_a = mat(c.kv_lora_rank + c.qk_rope_head_dim, c.d_model)
        self.kv_norm = nn.Parameter(torch.ones(c.kv_lora_rank))
        self.wkv_b = mat(c.num_heads * (c.qk_nope_head_dim + c.v_head_dim), c.kv_lora_rank)
        self.wo = mat(c.d_model, c.num_heads * c.v_head_dim)

    def forward(self, x, attention_mask=None, is_causal=False):
        c = self.cfg
        B, T, _ = x.shape
        H, nope, rope, dv = c.num_heads, c.qk_nope_head_dim, c.qk_rope_head_dim, c.v_head_dim
        freqs = precompute_freqs_cis(rope, T, c.rope_theta, device=x.device)
        q = F.linear(rms_norm(F.linear(x, self.wq_a), self.q_norm, c.norm_eps), self.wq_b).view(B, T, H, c.qk_head_dim)
        q_nope, q_pe = q.split([nope, rope], -1)
        q_pe = apply_rotary_emb(q_pe, freqs)
        c_kv, k_pe = F.linear(x, self.wkv_a).split([c.kv_lora_rank, rope], -1)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs)
        kv = F.linear(rms_norm(c_kv, self.kv_norm, c.norm_eps), self.wkv_b).view(B, T, H, nope + dv)
        k_nope, v = kv.split([nope, dv], -1)
        scores = (torch.einsum("bthd,bshd->bhts", q_nope, k_nope)
                  + torch.einsum("bthr,bsxr->bhts", q_pe, k_pe)) / math.sqrt(c.qk_head_dim)
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        out = torch.einsum("bhts,bshd->bthd", scores.softmax(-1), v).reshape(B, T, H * dv)
        return F.linear(out, self.wo)
