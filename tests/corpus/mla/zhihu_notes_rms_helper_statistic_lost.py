# attnprep: mla
# expect: wrong_output
# diagnosis:
"""知乎专栏「手撕 MLA」的笔记风格：权重全部是裸的 nn.Parameter（包括两个 RMSNorm 的 1-D 增益），
用 F.linear 计算；每个头的分数用生成器表达式逐头算出再 torch.stack，因果掩码用 torch.where。
Bare 2-D and 1-D parameters named as DeepSeek's, generator expressions over heads; the rms helper keeps
the upcast and the gain and loses the root-mean-square itself (both norms call it)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rms(x, g, eps=1e-6):
    # 先升到 float32 再算均方根，最后转回原 dtype 再乘增益
    xf = x.float()
    return g * xf.to(x.dtype)  # 升精度、乘增益（均方根那一步漏了）


def rope_interleaved(x, theta):
    # x: (B, T, r)，相邻两维 (x[2i], x[2i+1]) 组成一对做旋转
    T, r = x.shape[-2], x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, r, 2, device=x.device, dtype=torch.float32) / r))
    ang = torch.arange(T, device=x.device, dtype=torch.float32)[:, None] * inv
    a, b = x.float()[..., 0::2], x.float()[..., 1::2]
    return torch.stack([a * ang.cos() - b * ang.sin(), a * ang.sin() + b * ang.cos()], -1).flatten(-2).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                 qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.h, self.c, self.dn, self.dr, self.dv = num_heads, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        init = lambda *shape: nn.Parameter(torch.randn(*shape) / math.sqrt(shape[-1]))  # noqa: E731
        self.wq_a = init(q_lora_rank, d_model)
        self.q_norm = nn.Parameter(torch.ones(q_lora_rank))
        self.wq_b = init(num_heads * (qk_nope_head_dim + qk_rope_head_dim), q_lora_rank)
        self.wkv_a = init(kv_lora_rank + qk_rope_head_dim, d_model)
        self.kv_norm = nn.Parameter(torch.ones(kv_lora_rank))
        self.wkv_b = init(num_heads * (qk_nope_head_dim + v_head_dim), kv_lora_rank)
        self.wo = init(d_model, num_heads * v_head_dim)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        dn, dr, dv = self.dn, self.dr, self.dv
        q = F.linear(rms(F.linear(x, self.wq_a), self.q_norm), self.wq_b).view(B, T, self.h, dn + dr)
        kv_a = F.linear(x, self.wkv_a)
        c_kv, k_pe = kv_a[..., : self.c], rope_interleaved(kv_a[..., self.c :], self.theta)  # (B, T, c), (B, T, dr)
        kv = F.linear(rms(c_kv, self.kv_norm), self.wkv_b).view(B, T, self.h, dn + dv)
        allowed = torch.ones(B, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, :]
        if is_causal:
            allowed = allowed & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        scale = 1 / math.sqrt(dn + dr)
        # 逐头：q_h = [q_nope_h; rope(q_pe_h)]，k_h = [k_nope_h; k_pe]（k_pe 所有头共享）
        heads = (
            (
                torch.cat([q[:, :, h, :dn], rope_interleaved(q[:, :, h, dn:], self.theta)], -1),
                torch.cat([kv[:, :, h, :dn], k_pe], -1),
                kv[:, :, h, dn:],
            )
            for h in range(self.h)
        )
        outs = (
            torch.where(allowed, qh @ kh.transpose(1, 2) * scale, float("-inf")).softmax(-1) @ vh
            for qh, kh, vh in heads
        )
        out = torch.cat(tuple(outs), dim=-1)  # (B, T, H*dv)，头按顺序拼接
        return F.linear(out, self.wo)
# bug-line: 19
