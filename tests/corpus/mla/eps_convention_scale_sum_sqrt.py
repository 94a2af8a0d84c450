# attnprep: mla
# expect: wrong_output
# diagnosis: norm_eps_convention + mla_scale_sum_sqrt
"""Bare-parameter MLA whose RMSNorm helper defaults to eps=1e-5 (Llama 2's) where the contract says 1e-6, and whose
scale is 1/(sqrt(nope) + sqrt(rope))."""

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def _rms(x: Tensor, gain: Tensor, eps: float = 1e-5) -> Tensor:
    # 均方根归一化：在 float32 里算统计量
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return xf.to(x.dtype) * gain


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, q_lora_rank: int, kv_lora_rank: int,
                 qk_nope_head_dim: int, qk_rope_head_dim: int, v_head_dim: int,
                 rope_theta: float = 10000.0) -> None:
        super().__init__()
        self.n_heads = num_heads
        self.kv_rank = kv_lora_rank
        self.d_nope, self.d_rope, self.d_v = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        d_qk = qk_nope_head_dim + qk_rope_head_dim
        # 投影矩阵：形状 (out, in)，和 nn.Linear 一样
        self.w_dq = nn.Parameter(torch.randn(q_lora_rank, d_model) * 0.02)
        self.g_q = nn.Parameter(torch.ones(q_lora_rank))          # q 潜变量的 RMSNorm 增益
        self.w_uq = nn.Parameter(torch.randn(num_heads * d_qk, q_lora_rank) * 0.02)
        self.w_dkv = nn.Parameter(torch.randn(kv_lora_rank + qk_rope_head_dim, d_model) * 0.02)
        self.g_kv = nn.Parameter(torch.ones(kv_lora_rank))        # kv 潜变量的 RMSNorm 增益
        self.w_ukv = nn.Parameter(torch.randn(num_heads * (qk_nope_head_dim + v_head_dim), kv_lora_rank) * 0.02)
        self.w_out = nn.Parameter(torch.randn(d_model, num_heads * v_head_dim) * 0.02)

    def _rotate(self, x: Tensor, T: int) -> Tensor:
        # 相邻两维 (x[2i], x[2i+1]) 一对，按复数旋转
        d = x.shape[-1]
        inv = 1.0 / self.theta ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)
        ang = torch.outer(torch.arange(T, device=x.device, dtype=torch.float32), inv)  # (T, d/2)
        rot = torch.polar(torch.ones_like(ang), ang)
        xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], d // 2, 2))
        return torch.view_as_real(xc * rot.view(1, T, 1, d // 2)).flatten(-2).to(x.dtype)

    def forward(self, x: Tensor, attention_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        B, T, _ = x.shape
        H, dn, dr, dv = self.n_heads, self.d_nope, self.d_rope, self.d_v

        q = F.linear(_rms(F.linear(x, self.w_dq), self.g_q), self.w_uq).view(B, T, H, dn + dr)
        q_nope, q_pe = torch.split(q, [dn, dr], dim=-1)
        q_pe = self._rotate(q_pe, T)

        c_kv, k_pe = torch.split(F.linear(x, self.w_dkv), [self.kv_rank, dr], dim=-1)
        k_pe = self._rotate(k_pe.unsqueeze(2), T)  # (B, T, 1, dr)：所有头共用
        kv = F.linear(_rms(c_kv, self.g_kv), self.w_ukv).view(B, T, H, dn + dv)
        k_nope, v = torch.split(kv, [dn, dv], dim=-1)

        q = torch.cat([q_nope, q_pe], dim=-1).transpose(1, 2)                       # (B, H, T, dn+dr)
        k = torch.cat([k_nope, k_pe.expand(B, T, H, dr)], dim=-1).transpose(1, 2)
        v = v.transpose(1, 2)

        s = torch.matmul(q, k.transpose(-1, -2)) / (math.sqrt(dn) + math.sqrt(dr))
        neg = torch.finfo(s.dtype).min
        if is_causal:
            allowed = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            s = torch.where(allowed, s, neg)
        if attention_mask is not None:
            s = torch.where(attention_mask[:, None, None, :].bool(), s, neg)
        p = torch.softmax(s, dim=-1)
        o = torch.matmul(p, v).transpose(1, 2).reshape(B, T, H * dv)
        return F.linear(o, self.w_out)
