# attnprep: decoder_layer
# expect: passed
"""torchtune's TransformerSelfAttentionLayer: sa_norm / mlp_norm as torch's own nn.RMSNorm (allowed
here: the layer is the exercise), MultiHeadAttention with output_proj and a RotaryPositionalEmbeddings
module in (B, T, H, D), FeedForward with gate_proj / up_proj / down_proj; einsum for the scores."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class RotaryPositionalEmbeddings(nn.Module):
    def __init__(self, dim: int, base: float = 10_000.0) -> None:
        super().__init__()
        theta = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("theta", theta, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (b, s, n_h, h_d)
        s = x.size(1)
        idx_theta = torch.einsum("i,j->ij", torch.arange(s, device=x.device).float(), self.theta)
        emb = torch.cat([idx_theta, idx_theta], dim=-1)[None, :, None, :]  # (1, s, 1, h_d)
        x1, x2 = x.chunk(2, dim=-1)
        return x * emb.cos() + torch.cat([-x2, x1], dim=-1) * emb.sin()


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, num_kv_heads, rope_base):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(embed_dim, num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(embed_dim, num_kv_heads * self.head_dim, bias=False)
        self.output_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.pos_embeddings = RotaryPositionalEmbeddings(self.head_dim, base=rope_base)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.pos_embeddings(self.q_proj(x).view(b, s, self.num_heads, self.head_dim))
        k = self.pos_embeddings(self.k_proj(x).view(b, s, self.num_kv_heads, self.head_dim))
        v = self.v_proj(x).view(b, s, self.num_kv_heads, self.head_dim)
        q_per_kv = self.num_heads // self.num_kv_heads
        k = k.repeat_interleave(q_per_kv, dim=2)
        v = v.repeat_interleave(q_per_kv, dim=2)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(~mask, float("-inf"))  # mask: (b, 1, s, s), True = may attend
        out = torch.einsum("bhqk,bkhd->bqhd", scores.softmax(dim=-1), v)
        return self.output_proj(out.reshape(b, s, -1))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, dim, bias=False)
        self.up_proj = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads, num_kv_heads, rope_theta)
        self.mlp = FeedForward(d_model, d_ff)
        self.sa_norm = nn.RMSNorm(d_model, eps=eps)
        self.mlp_norm = nn.RMSNorm(d_model, eps=eps)

    def forward(self, x, attention_mask=None):
        s = x.size(1)
        mask = torch.tril(torch.ones(s, s, dtype=torch.bool, device=x.device))[None, None]
        if attention_mask is not None:
            mask = mask & attention_mask[:, None, None, :]
        h = self.attn(self.sa_norm(x), mask) + x
        return self.mlp(self.mlp_norm(h)) + h
