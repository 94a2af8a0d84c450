"""A Llama decoder layer: pre-norm attention and SwiGLU feed-forward, each inside a residual.

h = x + attention(attn_norm(x)); out = h + ffn(ffn_norm(h)). The attention is causal grouped-query
attention (num_kv_heads key/value heads, each shared by num_heads // num_kv_heads consecutive query
heads) with rotary position embeddings (rotate-half, positions 0 .. T-1) on q and k after the head
split; the feed-forward is SwiGLU. RMSNorm everywhere, no biases (Meta's Llama, Hugging Face's
LlamaDecoderLayer).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    """x / sqrt(mean(x²) + eps) · weight, the statistics in float32 (Llama's way)."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return x32.type_as(x) * self.weight


def rope_cache(seq_len: int, dim: int, theta: float, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin (seq_len, dim) of the rotate-half RoPE at positions 0 .. seq_len-1."""
    inv_freq = 1.0 / theta ** (torch.arange(0, dim, 2, device=device).float() / dim)  # (dim/2,)
    freqs = torch.outer(torch.arange(seq_len, device=device).float(), inv_freq)  # (T, dim/2)
    emb = torch.cat([freqs, freqs], dim=-1)  # (T, dim)
    return emb.cos(), emb.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return x * cos + rotate_half(x) * sin  # cos, sin broadcast over batch and heads


class DecoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope_theta: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.rope_theta = rope_theta
        self.attn_norm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)  # gate
        self.w2 = nn.Linear(d_ff, d_model, bias=False)  # down
        self.w3 = nn.Linear(d_model, d_ff, bias=False)  # up

    def attention(self, x: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        B, T, C = x.shape
        H, G, D = self.num_heads, self.num_kv_heads, self.head_dim
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        k = self.k_proj(x).view(B, T, G, D).transpose(1, 2)  # (B, G, T, D)
        v = self.v_proj(x).view(B, T, G, D).transpose(1, 2)  # (B, G, T, D)
        cos, sin = rope_cache(T, D, self.rope_theta, x.device)  # (T, D) each
        q = apply_rope(q, cos, sin)  # positions on q and k only, per head
        k = apply_rope(k, cos, sin)
        k = k.repeat_interleave(H // G, dim=1)  # (B, H, T, D): query head h reads KV head h // (H // G)
        v = v.repeat_interleave(H // G, dim=1)  # (B, H, T, D)
        scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, T)
        if attention_mask is not None:  # (B, T), True = real token: padded keys get no attention
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))  # (B, 1, 1, T)
        allowed = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))  # query i sees keys j <= i
        scores = scores.masked_fill(~allowed, float("-inf"))
        attn = scores.softmax(dim=-1)  # (B, H, T, T)
        out = (attn @ v).transpose(1, 2).reshape(B, T, C)  # (B, T, d_model)
        return self.o_proj(out)

    def feed_forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))  # SwiGLU

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        # x: (B, T, d_model); attention_mask: (B, T) bool, True = real token
        h = x + self.attention(self.attn_norm(x), attention_mask)  # normalise, attend, add back
        out = h + self.feed_forward(self.ffn_norm(h))  # the same around the feed-forward
        return out  # (B, T, d_model)
