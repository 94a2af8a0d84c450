# attnprep: mla_decode
# expect: wrong_output
# diagnosis: mla_scale_kv_rank + cache_mask_not_offset
"""mlx-lm's deepseek_v3.py habits ported to torch: `create_causal_mask(N, offset)` as mlx-lm writes
it (linds / rinds aranges), `mx.`-style aliases (mx_split at indices, mx_matmul), scale stored as an
exponent, the absorbed path with embed_q / unembed_out helpers. Two slips: the scale is taken from the
latent the query is scored against (kv_lora_rank ** -0.5), and the mask is asked for without the
cache's offset."""

import torch
import torch.nn as nn

mx_matmul = torch.matmul


def mx_split(x, indices, axis=-1):
    return torch.tensor_split(x, indices, dim=axis)


def create_causal_mask(q_len, k_len, offset=0, device=None):
    rinds = torch.arange(k_len, device=device)
    linds = torch.arange(q_len, device=device) + offset
    return linds[:, None] >= rinds[None, :]  # (q_len, k_len), True = may attend


class RMSNorm(nn.Module):
    def __init__(self, dims, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dims))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        return self.weight * (xf * (xf.square().mean(-1, keepdim=True) + self.eps).rsqrt()).to(x.dtype)


def rope_traditional(x, offset, base):
    """x (B, H, L, r) with mlx's traditional=True pairs, positions offset .. offset + L - 1."""
    L, r = x.shape[-2], x.shape[-1]
    inv = base ** (-torch.arange(0, r, 2, device=x.device, dtype=torch.float32) / r)
    theta = (offset + torch.arange(L, device=x.device, dtype=torch.float32))[:, None] * inv  # (L, r/2)
    a, b = x.float()[..., 0::2], x.float()[..., 1::2]
    return torch.stack([a * theta.cos() - b * theta.sin(), a * theta.sin() + b * theta.cos()], -1).flatten(-2).to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.num_heads, self.kv_lora_rank = num_heads, kv_lora_rank
        self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.rope_theta = rope_theta
        self.scale = kv_lora_rank ** -0.5
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def embed_q(self, q_nope):  # (B, H, L, nope) -> (B, H, L, c)
        H, nope = self.num_heads, self.qk_nope_head_dim
        w_uk = self.wkv_b.weight.view(H, nope + self.v_head_dim, -1)[:, :nope]  # (H, nope, c)
        return mx_matmul(q_nope, w_uk)

    def unembed_out(self, x):  # (B, H, L, c) -> (B, H, L, dv)
        H, nope = self.num_heads, self.qk_nope_head_dim
        w_uv = self.wkv_b.weight.view(H, nope + self.v_head_dim, -1)[:, nope:]  # (H, dv, c)
        return mx_matmul(x, w_uv.transpose(-1, -2))

    def forward(self, x, cache=None):
        B, L, _ = x.shape
        H, nope, r, dv = self.num_heads, self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim
        offset = 0 if cache is None else cache[0].shape[1]
        q = self.wq_b(self.q_norm(self.wq_a(x))).reshape(B, L, H, nope + r).transpose(1, 2)  # (B, H, L, ·)
        q_nope, q_pe = mx_split(q, [nope])
        q_pe = rope_traditional(q_pe, offset, self.rope_theta)
        kv_latent, k_pe = mx_split(self.wkv_a(x), [self.kv_lora_rank])
        kv_latent = self.kv_norm(kv_latent)  # (B, L, c)
        k_pe = rope_traditional(k_pe[:, None], offset, self.rope_theta)[:, 0]  # (B, L, r)
        if cache is not None:
            kv_latent = torch.cat([cache[0], kv_latent], axis=1)
            k_pe = torch.cat([cache[1], k_pe], axis=1)
        S = kv_latent.shape[1]
        q_lat = self.embed_q(q_nope)  # (B, H, L, c)
        scores = mx_matmul(q_lat, kv_latent[:, None].transpose(-1, -2))
        scores = scores + mx_matmul(q_pe, k_pe[:, None].transpose(-1, -2))  # (B, H, L, S)
        scores = scores * self.scale
        mask = create_causal_mask(L, S, device=x.device)
        scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
        probs = torch.softmax(scores, dim=-1)
        out = self.unembed_out(mx_matmul(probs, kv_latent[:, None]))  # (B, H, L, dv)
        return self.wo(out.transpose(1, 2).reshape(B, L, H * dv)), (kv_latent, k_pe)
# bug-line: 53, 90
