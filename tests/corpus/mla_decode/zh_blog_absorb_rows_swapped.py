# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_split_order
"""中文博客风格; W_UK 取成了最后 nope 行、W_UV 取成了最前 v 行 (rows swapped)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.n_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.qk_nope_head_dim = qk_nope_head_dim
        self.qk_rope_head_dim = qk_rope_head_dim
        self.v_head_dim = v_head_dim
        self.rope_theta = rope_theta
        self.softmax_scale = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = nn.RMSNorm(q_lora_rank, eps=1e-6)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = nn.RMSNorm(kv_lora_rank, eps=1e-6)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def 旋转位置编码(self, x, 起点):
        # x: (B, T, ..., r)，相邻两维一组，位置从 起点 开始（绝对位置）
        T, r = x.shape[1], x.shape[-1]
        频率 = 1.0 / self.rope_theta ** (torch.arange(0, r, 2, device=x.device).float() / r)
        角度 = torch.outer(torch.arange(起点, 起点 + T, device=x.device).float(), 频率)
        旋转 = torch.polar(torch.ones_like(角度), 角度).view(1, T, *([1] * (x.dim() - 3)), r // 2)
        xc = torch.view_as_complex(x.float().contiguous().view(*x.shape[:-1], r // 2, 2))
        return torch.view_as_real(xc * 旋转).flatten(-2).type_as(x)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        已缓存 = 0 if cache is None else cache[0].size(1)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, self.n_heads, -1)
        q_nope, q_pe = q.split([self.qk_nope_head_dim, self.qk_rope_head_dim], -1)
        q_pe = self.旋转位置编码(q_pe, 已缓存)
        # 只缓存 c_kv（归一化之后）和旋转过的 k_pe
        c_kv, k_pe = self.wkv_a(x).split([self.kv_lora_rank, self.qk_rope_head_dim], -1)
        c_kv = self.kv_norm(c_kv)
        k_pe = self.旋转位置编码(k_pe, 已缓存)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], 1)
            k_pe = torch.cat([cache[1], k_pe], 1)
        # 权重吸收: (H*(nope+v), c) -> (H, nope+v, c) -> (H, c, nope+v)
        w = self.wkv_b.weight.view(self.n_heads, -1, self.kv_lora_rank).permute(0, 2, 1)
        w_uv, w_uk = w[..., : self.v_head_dim], w[..., self.v_head_dim:]
        q_nope = q_nope * self.softmax_scale
        q_pe = q_pe * self.softmax_scale
        q_lat = torch.einsum("bthd,hcd->bthc", q_nope, w_uk)
        scores = torch.einsum("bthc,bsc->bhts", q_lat, c_kv) + torch.einsum("bthr,bsr->bhts", q_pe, k_pe)
        S = c_kv.shape[1]
        mask = torch.triu(torch.ones(T, S, dtype=torch.bool, device=x.device), diagonal=已缓存 + 1)
        scores = scores.masked_fill(mask, -1e9)
        attn = F.softmax(scores, dim=-1)
        o = torch.einsum("bhts,bsc->bthc", attn, c_kv)
        o = torch.einsum("bthc,hcd->bthd", o, w_uv)
        return self.wo(o.flatten(2)), (c_kv, k_pe)
# bug-line: 52
