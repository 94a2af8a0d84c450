# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_rope_position_zero
"""OpenAI gpt-oss reference habits (torch/model.py): a RotaryEmbedding module with _compute_cos_sin,
the attention core written as gpt-oss's sdpa (QK by einsum, `QK *= sm_scale`, an additive triu mask
from new_full(-inf)), hidden sizes named as its config (num_attention_heads, sm_scale). The absorbed
DeepSeek decode path on top. Both RoPE calls rotate the new tokens from position 0: the start
argument exists but is never passed T_past."""

import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(num_features, dtype=torch.float32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t, dtype = x.float(), x.dtype
        t = t * torch.rsqrt(torch.mean(t**2, dim=-1, keepdim=True) + self.eps)
        return (t * self.scale).to(dtype)


class RotaryEmbedding(nn.Module):
    """gpt-oss's RotaryEmbedding without YaRN, on DeepSeek's adjacent pairs (x[2i], x[2i+1])."""

    def __init__(self, head_dim: int, base: float):
        super().__init__()
        self.head_dim, self.base = head_dim, base

    def _compute_cos_sin(self, start: int, num_tokens: int, device):
        freq = self.base ** (torch.arange(0, self.head_dim, 2, dtype=torch.float32, device=device) / self.head_dim)
        t = torch.arange(start, start + num_tokens, dtype=torch.float32, device=device)
        freqs = torch.einsum("i,j->ij", t, 1.0 / freq)  # (T, r/2)
        return freqs.cos(), freqs.sin()

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        # x: (B, T, ..., r)
        cos, sin = self._compute_cos_sin(start, x.shape[1], x.device)
        shape = (1, x.shape[1]) + (1,) * (x.dim() - 3) + (-1,)
        cos, sin = cos.view(shape), sin.view(shape)
        x1, x2 = x.float()[..., ::2], x.float()[..., 1::2]
        o1 = x1 * cos - x2 * sin
        o2 = x2 * cos + x1 * sin
        return torch.stack((o1, o2), dim=-1).flatten(-2).to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_attention_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.nope, self.rope_dim, self.dv = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.sm_scale = 1 / math.sqrt(qk_nope_head_dim + qk_rope_head_dim)
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)
        self.rope = RotaryEmbedding(qk_rope_head_dim, rope_theta)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, nope, r, dv, c = self.num_attention_heads, self.nope, self.rope_dim, self.dv, self.kv_lora_rank
        T_past = 0 if cache is None else cache[0].shape[1]
        S = T_past + T
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, nope + r)
        q_nope, q_pe = q.split([nope, r], dim=-1)
        q_pe = self.rope(q_pe)
        c_kv, k_pe = self.wkv_a(x).split([c, r], dim=-1)
        c_kv = self.kv_norm(c_kv)  # (B, T, c): what is cached
        k_pe = self.rope(k_pe)  # (B, T, r)
        if cache is not None:
            c_kv = torch.cat((cache[0], c_kv), dim=1)
            k_pe = torch.cat((cache[1], k_pe), dim=1)
        w = self.wkv_b.weight.view(H, nope + dv, c)
        w_uk, w_uv = w[:, :nope], w[:, nope:]
        q_lat = torch.einsum("bqhd,hdc->bqhc", q_nope, w_uk)  # (B, T, H, c)
        QK = torch.einsum("bqhc,bkc->bhqk", q_lat, c_kv) + torch.einsum("bqhr,bkr->bhqk", q_pe, k_pe)
        QK *= self.sm_scale
        mask = torch.triu(QK.new_full((T, S), -float("inf")), diagonal=T_past + 1)
        QK += mask[None, None, :, :]
        W = torch.softmax(QK, dim=-1)  # (B, H, T, S)
        o_lat = torch.einsum("bhqk,bkc->bqhc", W, c_kv)
        attn = torch.einsum("bqhc,hdc->bqhd", o_lat, w_uv)  # (B, T, H, dv)
        return self.wo(attn.reshape(B, T, H * dv)), (c_kv, k_pe)
# bug-line: 76, 79
