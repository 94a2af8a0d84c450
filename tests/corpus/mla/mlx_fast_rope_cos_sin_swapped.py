# attnprep: mla
# expect: wrong_output
# diagnosis: rope_cos_sin_swapped
"""MLX habits ported to torch: a `fast_rope(x, dims, traditional=True, base, offset)` helper shaped like
mx.fast.rope (traditional = adjacent pairs, DeepSeek's form), mx-style free functions aliased at the
top (matmul, softmax, split at indices rather than sizes), swapaxes instead of transpose, the scale
folded into the queries and torch.where masks with -1e9. The helper's rotation has cos and sin
exchanged."""

import torch
import torch.nn as nn

matmul = torch.matmul
softmax = torch.softmax


def split_at(x, indices, axis=-1):
    """mx.split(x, [i], axis): the pieces between the given indices (not sizes)."""
    return torch.tensor_split(x, indices, dim=axis)


def fast_rope(x, dims, *, traditional=True, base=10000.0, scale=1.0, offset=0):
    """x (..., T, dims) rotated by position offset + t; traditional: pairs (x[2i], x[2i+1])."""
    T = x.shape[-2]
    inv = base ** (-torch.arange(0, dims, 2, dtype=torch.float32, device=x.device) / dims)  # (dims/2,)
    ang = (offset + torch.arange(T, dtype=torch.float32, device=x.device))[:, None] * scale * inv  # (T, dims/2)
    cos, sin = ang.cos(), ang.sin()
    x1, x2 = x.float().unflatten(-1, (-1, 2)).unbind(-1)  # (..., T, dims/2) each
    rot = torch.stack([x1 * sin - x2 * cos, x1 * cos + x2 * sin], dim=-1)
    return rot.flatten(-2).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dims, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dims))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        return self.weight * (xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class MultiHeadLatentAttention(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.qk_nope_head_dim, self.qk_rope_head_dim = qk_nope_head_dim, qk_rope_head_dim
        self.v_head_dim = v_head_dim
        self.rope_theta = rope_theta
        self.scale = (qk_nope_head_dim + qk_rope_head_dim) ** -0.5
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, L, _ = x.shape
        H, dn, dr, dv = self.num_heads, self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim
        q = self.wq_b(self.q_norm(self.wq_a(x))).reshape(B, L, H, dn + dr).swapaxes(1, 2)  # (B, H, L, dn+dr)
        q_nope, q_pe = split_at(q, [dn])
        c_kv, k_pe = split_at(self.wkv_a(x), [self.kv_lora_rank])  # (B, L, c), (B, L, dr)
        q_pe = fast_rope(q_pe, dr, base=self.rope_theta)
        k_pe = fast_rope(k_pe[:, None], dr, base=self.rope_theta)  # (B, 1, L, dr): one head for all
        kv = self.wkv_b(self.kv_norm(c_kv)).reshape(B, L, H, dn + dv).swapaxes(1, 2)  # (B, H, L, dn+dv)
        k_nope, values = split_at(kv, [dn])
        keys = torch.cat([k_nope, k_pe.expand(B, H, L, dr)], dim=-1)  # (B, H, L, dn+dr)
        queries = torch.cat([q_nope, q_pe], dim=-1) * self.scale
        scores = matmul(queries, keys.swapaxes(-1, -2))  # (B, H, L, L)
        if attention_mask is not None:
            scores = torch.where(attention_mask[:, None, None, :], scores, -1e9)
        if is_causal:
            idx = torch.arange(L, device=x.device)
            scores = torch.where(idx[None, :] <= idx[:, None], scores, -1e9)
        out = matmul(softmax(scores.float(), dim=-1).to(scores.dtype), values)  # (B, H, L, dv)
        return self.wo(out.swapaxes(1, 2).reshape(B, L, H * dv))
# bug-line: 29
