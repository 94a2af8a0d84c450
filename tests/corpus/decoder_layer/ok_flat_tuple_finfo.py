# attnprep: decoder_layer
# expect: passed
"""The contract's own names, type hints, helpers as methods, finfo.min fill, repeat_kv by expand,
and (out, attn_weights) returned."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        var = x.float().pow(2).mean(dim=-1, keepdim=True)
        return (x.float() / torch.sqrt(var + self.eps)).to(x.dtype) * self.weight


class DecoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope_theta: float = 10000.0, eps: float = 1e-6) -> None:
        super().__init__()
        assert d_model % num_heads == 0 and num_heads % num_kv_heads == 0
        self.n_heads = num_heads
        self.n_kv = num_kv_heads
        self.head_dim = d_model // num_heads
        self.theta = rope_theta
        self.attn_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def _rope(self, x: torch.Tensor) -> torch.Tensor:
        T, D = x.size(-2), x.size(-1)
        pos = torch.arange(T, device=x.device, dtype=torch.float32)
        inv_freq = 1.0 / (self.theta ** (torch.arange(0, D, 2, device=x.device, dtype=torch.float32) / D))
        emb = torch.cat([torch.outer(pos, inv_freq)] * 2, dim=-1)  # (T, D)
        x1, x2 = x[..., : D // 2], x[..., D // 2 :]
        rotated = torch.cat((-x2, x1), dim=-1)
        return (x * emb.cos() + rotated * emb.sin()).to(x.dtype)

    def _attn(self, x: torch.Tensor, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_kv, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n_kv, self.head_dim).transpose(1, 2)
        q, k = self._rope(q), self._rope(k)
        n_rep = self.n_heads // self.n_kv
        k = k[:, :, None].expand(B, self.n_kv, n_rep, T, self.head_dim).reshape(B, self.n_heads, T, self.head_dim)
        v = v[:, :, None].expand(B, self.n_kv, n_rep, T, self.head_dim).reshape(B, self.n_heads, T, self.head_dim)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()[None, None]
        if mask is not None:
            keep = keep & mask.bool()[:, None, None, :]
        scores = scores.masked_fill(~keep, torch.finfo(scores.dtype).min)
        weights = F.softmax(scores, dim=-1)
        out = torch.matmul(weights, v).transpose(1, 2).contiguous().view(B, T, C)
        return self.o_proj(out), weights

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None):
        a, weights = self._attn(self.attn_norm(x), attention_mask)
        h = x + a
        y = self.ffn_norm(h)
        out = h + self.w2(F.silu(self.w1(y)) * self.w3(y))
        return out, weights
