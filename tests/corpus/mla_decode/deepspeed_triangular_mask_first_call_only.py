# attnprep: mla_decode
# expect: mask_leak
# diagnosis: cache_chunk_unmasked
"""DeepSpeed-inference habits: `layer_past` for the cache, a `triangular_masking` flag set in
__init__, `norm_factor` kept as sqrt of the head width, the score-softmax-context chain in a
`_attn` helper as DeepSpeed's reference softmax_context does. The triangular mask is only built for
the first call (layer_past is None): a chunk of several tokens decoded after a cache sees its own
future."""

import math

import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        f = x.float()
        return self.weight * (f * torch.rsqrt(f.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


def rotate_pairs(x, positions, theta):
    """x (B, T, ..., r), positions (T,): DeepSeek's interleaved pairs."""
    r = x.shape[-1]
    inv = theta ** (-torch.arange(0, r, 2, device=x.device, dtype=torch.float32) / r)
    ang = positions.float()[:, None] * inv  # (T, r/2)
    ang = ang.view((1, ang.shape[0]) + (1,) * (x.dim() - 3) + (r // 2,))
    xp = x.float().unflatten(-1, (r // 2, 2))
    x0, x1 = xp[..., 0], xp[..., 1]
    return torch.stack([x0 * ang.cos() - x1 * ang.sin(), x0 * ang.sin() + x1 * ang.cos()], -1).flatten(-2).to(x.dtype)


class MLADecode(nn.Module):
    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
                 v_head_dim, rope_theta=10000.0):
        super().__init__()
        self.heads = num_heads
        self.kv_lora_rank = kv_lora_rank
        self.nope, self.rope_dim, self.v_dim = qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        self.norm_factor = math.sqrt(qk_nope_head_dim + qk_rope_head_dim)
        self.triangular_masking = True
        self.wq_a = nn.Linear(d_model, q_lora_rank, bias=False)
        self.q_norm = RMSNorm(q_lora_rank)
        self.wq_b = nn.Linear(q_lora_rank, num_heads * (qk_nope_head_dim + qk_rope_head_dim), bias=False)
        self.wkv_a = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(kv_lora_rank)
        self.wkv_b = nn.Linear(kv_lora_rank, num_heads * (qk_nope_head_dim + v_head_dim), bias=False)
        self.wo = nn.Linear(num_heads * v_head_dim, d_model, bias=False)

    def _attn(self, q_lat, q_pe, latents, k_pe, mask):
        scores = torch.einsum("bthc,bsc->bhts", q_lat, latents) + torch.einsum("bthr,bsr->bhts", q_pe, k_pe)
        scores = scores / self.norm_factor
        if mask is not None:
            scores = scores.masked_fill(~mask, -1e9)
        probs = scores.softmax(dim=-1)  # (B, H, T, S)
        return torch.einsum("bhts,bsc->bthc", probs, latents)  # (B, T, H, c)

    def forward(self, x, cache=None):
        layer_past = cache
        B, T, _ = x.shape
        H, nope, r, dv, c = self.heads, self.nope, self.rope_dim, self.v_dim, self.kv_lora_rank
        past_len = 0 if layer_past is None else layer_past[0].size(1)
        positions = torch.arange(past_len, past_len + T, device=x.device)
        q = self.wq_b(self.q_norm(self.wq_a(x))).view(B, T, H, nope + r)
        q_nope, q_pe = q[..., :nope], rotate_pairs(q[..., nope:], positions, self.theta)
        latent, k_pe = self.wkv_a(x).split([c, r], dim=-1)
        latent = self.kv_norm(latent)
        k_pe = rotate_pairs(k_pe, positions, self.theta)  # (B, T, r)
        if layer_past is not None:
            latent = torch.cat([layer_past[0], latent], dim=1)
            k_pe = torch.cat([layer_past[1], k_pe], dim=1)
        S = latent.size(1)
        w = self.wkv_b.weight.view(H, nope + dv, c)
        q_lat = torch.einsum("bthd,hdc->bthc", q_nope, w[:, :nope])
        mask = None
        if self.triangular_masking and layer_past is None:
            mask = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(diagonal=past_len)
        ctx = self._attn(q_lat, q_pe, latent, k_pe, mask)
        out = torch.einsum("bthc,hdc->bthd", ctx, w[:, nope:])  # (B, T, H, dv)
        return self.wo(out.reshape(B, T, H * dv)), (latent, k_pe)
# bug-line: 82
