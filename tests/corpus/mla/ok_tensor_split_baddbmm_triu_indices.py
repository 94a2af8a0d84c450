# attnprep: mla
# expect: passed
"""Correct: heads folded into the batch with unflatten / movedim / flatten(0, 1), the parts cut with
tensor_split at indices, RoPE on unbind-ed pairs, one additive bias whose future entries are set
through torch.triu_indices and whose padded keys are filled from attention_mask.logical_not(), the
scores by torch.baddbmm(bias, q, kᵀ, alpha=scale)."""

import torch
import torch.nn as nn


def rotate_pairs(x, cos, sin):
    x1, x2 = x.float().unflatten(-1, (-1, 2)).unbind(-1)  # (..., T, r/2) each
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), -1).flatten(-2).type_as(x)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        return self.weight * (h / torch.sqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.n_heads, self.kv_rank = num_heads, kv_lora_rank
        self.nope, self.rope = qk_nope_head_dim, qk_rope_head_dim
        self.theta = rope_theta
        self.scale = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def _angles(self, T, device):
        inv = self.theta ** -(torch.arange(0, self.rope, 2, device=device, dtype=torch.float32) / self.rope)
        ang = torch.outer(torch.arange(T, device=device, dtype=torch.float32), inv)  # (T, rope/2)
        return ang.cos(), ang.sin()

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        H = self.n_heads
        q = self.wq_b(self.q_norm(self.wq_a(x))).unflatten(-1, (H, -1)).movedim(2, 1)  # (B, H, T, nope+rope)
        q_nope, q_pe = q.tensor_split([self.nope], dim=-1)
        c_kv, k_pe = self.wkv_a(x).tensor_split([self.kv_rank], dim=-1)  # (B, T, c), (B, T, rope)
        kv = self.wkv_b(self.kv_norm(c_kv)).unflatten(-1, (H, -1)).movedim(2, 1)  # (B, H, T, nope+dv)
        k_nope, v = kv.tensor_split([self.nope], dim=-1)
        cos, sin = self._angles(T, x.device)
        q_pe = rotate_pairs(q_pe, cos, sin)
        k_pe = rotate_pairs(k_pe.unsqueeze(1), cos, sin).expand(-1, H, -1, -1)  # (B, H, T, rope)
        qf = torch.cat([q_nope, q_pe], -1).flatten(0, 1)  # (B*H, T, nope+rope)
        kf = torch.cat([k_nope, k_pe], -1).flatten(0, 1)
        vf = v.flatten(0, 1)  # (B*H, T, dv)
        bias = x.new_zeros(B, 1, T, T)
        if is_causal:
            r, c = torch.triu_indices(T, T, offset=1, device=x.device)
            bias[:, :, r, c] = float("-inf")
        if attention_mask is not None:
            bias = bias.masked_fill(attention_mask.logical_not()[:, None, None, :], float("-inf"))
        bias = bias.expand(B, H, T, T).flatten(0, 1)  # (B*H, T, T)
        scores = torch.baddbmm(bias, qf, kf.transpose(1, 2), alpha=self.scale)
        out = torch.bmm(scores.softmax(-1), vf).unflatten(0, (B, H)).movedim(1, 2).flatten(2)  # (B, T, H*dv)
        return self.wo(out)
