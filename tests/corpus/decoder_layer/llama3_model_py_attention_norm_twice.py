# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_shared_norm
"""Meta's Llama 3 reference model.py names and shape: TransformerBlock with attention_norm / ffn_norm,
Attention with wq / wk / wv / wo and n_kv_heads, n_rep and repeat_kv (expand + reshape), FeedForward
with w1 / w2 / w3, `h = x + self.attention(...)`, `out = h + self.feed_forward(...)`; RoPE in the
rotate-half form the contract asks for (Hugging Face's permuted weights) from a precompute_freqs
helper. The feed-forward branch is normalised with attention_norm, so ffn_norm is never used."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float()).type_as(x)
        return output * self.weight


def precompute_freqs(dim: int, end: int, theta: float, device):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, device=device)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=device, dtype=torch.float32)
    freqs = torch.outer(t, freqs)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()  # (end, dim)


def apply_rotary_emb(xq, xk, cos, sin):
    def rot(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
        return torch.cat((-x2, x1), dim=-1)

    cos, sin = cos[:, None, :], sin[:, None, :]  # (T, 1, D) against (B, T, H, D)
    return (xq * cos + rot(xq) * sin).type_as(xq), (xk * cos + rot(xk) * sin).type_as(xk)


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return x[:, :, :, None, :].expand(bs, slen, n_kv_heads, n_rep, head_dim).reshape(bs, slen, n_kv_heads * n_rep, head_dim)


class Attention(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, rope_theta):
        super().__init__()
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads
        self.n_rep = n_heads // n_kv_heads
        self.head_dim = dim // n_heads
        self.rope_theta = rope_theta
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, dim, bias=False)

    def forward(self, x, mask):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        cos, sin = precompute_freqs(self.head_dim, seqlen, self.rope_theta, x.device)
        xq, xk = apply_rotary_emb(xq, xk, cos, sin)
        keys, values = repeat_kv(xk, self.n_rep), repeat_kv(xv, self.n_rep)
        xq, keys, values = xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = scores + mask
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        output = torch.matmul(scores, values)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(output)


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.attention = Attention(d_model, num_heads, num_kv_heads, rope_theta)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.attention_norm = RMSNorm(d_model, eps=eps)
        self.ffn_norm = RMSNorm(d_model, eps=eps)

    def forward(self, x, attention_mask=None):
        seqlen = x.shape[1]
        mask = torch.full((seqlen, seqlen), float("-inf"), device=x.device).triu(1)
        if attention_mask is not None:
            mask = mask.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        mask = mask.to(x.dtype)
        h = x + self.attention(self.attention_norm(x), mask)
        out = h + self.feed_forward(self.attention_norm(h))
        return out
# bug-line: 110
