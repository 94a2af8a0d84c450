# attnprep: mla_decode
# expect: passed
"""Correct: bare parameters through F.linear (RMSNorm gains as 1-d parameters), RoPE at absolute positions in float64, the absorbed scores from torch.baddbmm with the rope scores as its input."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _rope(x, start, theta):
    """Interleaved pairs of x (B, T, ..., r) rotated at absolute positions start .. start+T-1."""
    T, r = x.shape[1], x.shape[-1]
    inv = theta ** (-torch.arange(0, r, 2, device=x.device, dtype=torch.float64) / r)
    ang = torch.arange(start, start + T, device=x.device, dtype=torch.float64)[:, None] * inv
    ang = ang.view((1, T) + (1,) * (x.dim() - 3) + (r // 2,))
    a, b = x[..., 0::2].double(), x[..., 1::2].double()
    return torch.stack((a * ang.cos() - b * ang.sin(), a * ang.sin() + b * ang.cos()), -1).flatten(-2).to(x.dtype)


class MLADecode(nn.Module):
    """Bare parameters, F.linear, the absorbed scores built with baddbmm (rope part as the input)."""

    def __init__(self, d_model, num_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, rope_theta=10000.0):
        super().__init__()
        H = num_heads
        self.H, self.c, self.nope, self.rope, self.dv = H, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim
        self.theta = rope_theta
        p = lambda *s: nn.Parameter(torch.randn(*s) * 0.02)  # noqa: E731
        self.wq_a = p(q_lora_rank, d_model)
        self.q_norm = nn.Parameter(torch.ones(q_lora_rank))
        self.wq_b = p(H * (qk_nope_head_dim + qk_rope_head_dim), q_lora_rank)
        self.wkv_a = p(kv_lora_rank + qk_rope_head_dim, d_model)
        self.kv_norm = nn.Parameter(torch.ones(kv_lora_rank))
        self.wkv_b = p(H * (qk_nope_head_dim + v_head_dim), kv_lora_rank)
        self.wo = p(d_model, H * v_head_dim)

    @staticmethod
    def _rms(x, g):
        h = x.float()
        return g * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, c, nope, rope, dv = self.H, self.c, self.nope, self.rope, self.dv
        past = 0 if cache is None else cache[0].shape[1]
        q = F.linear(self._rms(F.linear(x, self.wq_a), self.q_norm), self.wq_b).view(B, T, H, nope + rope)
        q_nope, q_pe = q.split([nope, rope], -1)
        q_pe = _rope(q_pe, past, self.theta)
        c_kv, k_pe = F.linear(x, self.wkv_a).split([c, rope], -1)
        c_kv = self._rms(c_kv, self.kv_norm)
        k_pe = _rope(k_pe, past, self.theta)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], 1)
            k_pe = torch.cat([cache[1], k_pe], 1)
        S = c_kv.shape[1]
        wkv_b = self.wkv_b.view(H, nope + dv, c)
        q_lat = torch.einsum("bthn,hnc->bhtc", q_nope, wkv_b[:, :nope])            # (B, H, T, c)
        rope_scores = torch.einsum("bthr,bsr->bhts", q_pe, k_pe).reshape(B * H, T, S)
        lat = c_kv[:, None].expand(B, H, S, c).reshape(B * H, S, c)                 # a view over heads of the latent
        scores = torch.baddbmm(rope_scores, q_lat.reshape(B * H, T, c), lat.transpose(1, 2))
        scores = scores.view(B, H, T, S) / math.sqrt(nope + rope)
        future = torch.arange(S, device=x.device)[None, :] > torch.arange(past, S, device=x.device)[:, None]
        probs = scores.masked_fill(future, float("-inf")).softmax(-1)
        o_lat = torch.einsum("bhts,bsc->bthc", probs, c_kv)
        o = torch.einsum("bthc,hvc->bthv", o_lat, wkv_b[:, nope:])
        return F.linear(o.reshape(B, T, H * dv), self.wo), (c_kv, k_pe)
