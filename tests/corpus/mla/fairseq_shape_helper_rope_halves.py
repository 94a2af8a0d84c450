# attnprep: mla
# expect: wrong_output
# diagnosis: rope_rotate_half
"""fairseq's MultiheadAttention habits on MLA: a `_shape(tensor, seq_len, bsz)` helper that puts the
heads first, `self.scaling` multiplied into the queries before the product, `attn_weights` /
`attn_probs` names, `tgt_len` / `src_len`, a `key_padding_mask` turned to the contract's by its
inversion. The rotary helper takes the head-first rope parts and pairs the first half of the
features with the second (the GPT-NeoX rotate-half layout) where DeepSeek's MLA pairs adjacent
features."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rotary(x, theta):
    """x (bsz, heads, tgt_len, rot) rotated by position."""
    tgt_len, rot = x.size(-2), x.size(-1)
    inv_freq = 1.0 / (theta ** (torch.arange(0, rot, 2, device=x.device, dtype=torch.float32) / rot))
    freqs = torch.arange(tgt_len, device=x.device, dtype=torch.float32)[:, None] * inv_freq  # (tgt_len, rot/2)
    cos, sin = freqs.cos(), freqs.sin()
    x1, x2 = x.float().chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).type_as(x)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.nope_dim, self.rope_dim, self.v_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.rope_theta = rope_theta
        self.scaling = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def _shape(self, tensor, seq_len, bsz):
        return tensor.view(bsz, seq_len, self.num_heads, -1).transpose(1, 2).contiguous()

    def forward(self, x, attention_mask=None, is_causal=False):
        bsz, tgt_len, _ = x.size()
        q = self._shape(self.wq_b(self.q_norm(self.wq_a(x))), tgt_len, bsz)  # (bsz, heads, tgt_len, nope+rope)
        q_nope, q_pe = q.split([self.nope_dim, self.rope_dim], dim=-1)
        c_kv, k_pe = self.wkv_a(x).split([self.kv_lora_rank, self.rope_dim], dim=-1)
        kv = self._shape(self.wkv_b(self.kv_norm(c_kv)), tgt_len, bsz)  # (bsz, heads, src_len, nope+v)
        k_nope, v = kv.split([self.nope_dim, self.v_dim], dim=-1)
        q_pe = rotary(q_pe, self.rope_theta)
        k_pe = rotary(k_pe.unsqueeze(1), self.rope_theta).expand(-1, self.num_heads, -1, -1)
        q = torch.cat([q_nope, q_pe], dim=-1) * self.scaling
        k = torch.cat([k_nope, k_pe], dim=-1)
        attn_weights = torch.matmul(q, k.transpose(2, 3))  # (bsz, heads, tgt_len, src_len)
        src_len = k.size(2)
        if attention_mask is not None:
            key_padding_mask = ~attention_mask  # fairseq: True = pad
            attn_weights = attn_weights.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
        if is_causal:
            future = torch.ones(tgt_len, src_len, dtype=torch.bool, device=x.device).triu(1)
            attn_weights = attn_weights.masked_fill(future, float("-inf"))
        attn_probs = F.softmax(attn_weights, dim=-1)
        attn = torch.matmul(attn_probs, v).transpose(1, 2).reshape(bsz, tgt_len, self.num_heads * self.v_dim)
        return self.wo(attn)
# bug-line: 24, 25
