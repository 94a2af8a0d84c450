# attnprep: mla
# expect: passed
"""(B*H) layout with torch.baddbmm: the rope scores are the input, the nope scores added with beta=alpha=scale; k_pe shared by broadcasting through repeat_interleave; -1e4 fill via torch.where; own RMSNorm with rsqrt."""
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_interleaved(x, theta):  # x: (N, T, r)
    N, T, r = x.shape
    inv = theta ** (-torch.arange(0, r, 2, device=x.device, dtype=torch.float32) / r)
    ang = torch.arange(T, device=x.device, dtype=torch.float32)[:, None] * inv[None, :]
    xc = torch.view_as_complex(x.float().reshape(N, T, r // 2, 2).contiguous())
    return torch.view_as_real(xc * torch.polar(torch.ones_like(ang), ang)).reshape(N, T, r).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.H, self.nope, self.rope, self.dv, self.c = num_heads, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, kv_lora_rank
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
        H = self.H
        scale = (self.nope + self.rope) ** -0.5
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, -1).permute(0, 2, 1, 3).reshape(B * H, T, -1)
        q_nope, q_pe = q.split([self.nope, self.rope], -1)
        c_kv, k_pe = self.wkv_a(x).split([self.c, self.rope], -1)
        kv = self.wkv_b(self.kv_norm(c_kv)).view(B, T, H, -1).permute(0, 2, 1, 3).reshape(B * H, T, -1)
        k_nope, v = kv.split([self.nope, self.dv], -1)
        q_pe = rope_interleaved(q_pe, self.theta)
        k_pe = rope_interleaved(k_pe, self.theta).repeat_interleave(H, dim=0)  # (B*H, T, r)
        rope_scores = torch.bmm(q_pe, k_pe.transpose(1, 2))
        scores = torch.baddbmm(rope_scores, q_nope, k_nope.transpose(1, 2), beta=scale, alpha=scale)
        keep = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        keep = keep.expand(B, H, T, T).reshape(B * H, T, T)
        scores = torch.where(keep, scores, torch.full_like(scores, -1e4))
        p = scores.softmax(-1)
        out = torch.bmm(p, v).view(B, H, T, self.dv).transpose(1, 2).reshape(B, T, H * self.dv)
        return self.wo(out)
