# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_scale_kv_rank + mla_cache_before_norm
"""MLA 解码（吸收版）面试笔记：W_UK 吸收进 query，W_UV 吸收进输出；缓存只存潜向量 c_kv 和 k_pe。"""
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x32 = x.float()
        return self.weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)


def 旋转(x, 位置, theta):
    # 相邻两维一组旋转：(x0, x1) -> (x0 cos - x1 sin, x0 sin + x1 cos)
    r = x.shape[-1]
    频率 = 1.0 / theta ** (torch.arange(0, r, 2, device=x.device).float() / r)
    角 = 位置.float()[:, None] * 频率[None]
    c, s = 角.cos(), 角.sin()
    if x.dim() == 4:
        c, s = c[:, None], s[:, None]
    x0, x1 = x.float()[..., ::2], x.float()[..., 1::2]
    return torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], -1).flatten(-2).type_as(x)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h, self.lr = num_heads, kv_lora_rank
        self.dn, self.dr, self.dv = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)
        # 缩放：除以潜空间维度的平方根
        self.softmax_scale = self.lr ** -0.5

    def forward(self, x, cache=None):
        b, t, _ = x.shape
        过去 = 0 if cache is None else cache[0].size(1)
        位置 = torch.arange(过去, 过去 + t, device=x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(b, t, self.h, self.dn + self.dr)
        q_nope, q_pe = torch.split(q, [self.dn, self.dr], dim=-1)
        q_pe = 旋转(q_pe, 位置, self.theta)
        kv = self.wkv_a(x)
        c_kv, k_pe = torch.split(kv, [self.lr, self.dr], dim=-1)
        k_pe = 旋转(k_pe, 位置, self.theta)
        # 更新缓存（旧的在前）
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        新缓存 = (c_kv, k_pe)
        c_kv = self.kv_norm(c_kv)
        w = self.wkv_b.weight.view(self.h, self.dn + self.dv, self.lr)
        w_uk, w_uv = w[:, :self.dn], w[:, self.dn:]
        q_c = torch.einsum("bthd,hdc->bthc", q_nope, w_uk)             # 吸收 W_UK
        分数 = (torch.einsum("bthc,bsc->bths", q_c, c_kv)
               + torch.einsum("bthr,bsr->bths", q_pe, k_pe)) * self.softmax_scale
        总长 = c_kv.size(1)
        可见 = torch.arange(总长, device=x.device)[None, :] <= 位置[:, None]   # (t, S)
        分数 = 分数.masked_fill(~可见[None, :, None, :], float("-inf"))
        概率 = 分数.softmax(dim=-1)
        o = torch.einsum("bths,bsc->bthc", 概率, c_kv)
        o = torch.einsum("bthc,hvc->bthv", o, w_uv)                     # 吸收 W_UV
        return self.wo(o.flatten(2)), 新缓存
# bug-line: 47, 63
