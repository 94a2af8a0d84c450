# attnprep: decoder_layer
# expect: wrong_output
# diagnosis: decoder_rope_wrong_tensors
"""gpt-fast's TransformerBlock / Attention / FeedForward split (model.py) with Hugging Face's rotary
helpers: `h = x + self.attention(self.attention_norm(x), ...)`, `out = h +
self.feed_forward(self.ffn_norm(h))`, `q, k, v = map(lambda x: x.transpose(1, 2), (q, k, v))`,
`k.repeat_interleave(self.n_head // self.n_local_heads, dim=1)`. apply_rotary_emb is called on q only:
the keys' line was never written, so k reaches the scores unrotated."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)

    def forward(self, x: Tensor) -> Tensor:
        output = self._norm(x.float()).type_as(x)
        return output * self.weight


def precompute_cos_sin(seq_len: int, n_elem: int, base: float, device) -> "tuple[Tensor, Tensor]":
    freqs = 1.0 / (base ** (torch.arange(0, n_elem, 2, device=device).float() / n_elem))
    t = torch.arange(seq_len, device=device).float()
    emb = torch.outer(t, freqs).repeat(1, 2)
    return emb.cos(), emb.sin()


def apply_rotary_emb(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return (x * cos + torch.cat((-x2, x1), dim=-1) * sin).type_as(x)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.n_head, self.n_local_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        self.dim = d_model
        self.rope_base = rope_theta
        self.attention_norm = RMSNorm(d_model, eps)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.wq = nn.Linear(d_model, d_model, bias=False)
        self.wk = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(d_model, num_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(d_model, d_model, bias=False)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def attention(self, x: Tensor, attention_mask) -> Tensor:
        bsz, seqlen, _ = x.shape
        q = self.wq(x).view(bsz, seqlen, self.n_head, self.head_dim)
        k = self.wk(x).view(bsz, seqlen, self.n_local_heads, self.head_dim)
        v = self.wv(x).view(bsz, seqlen, self.n_local_heads, self.head_dim)
        q, k, v = map(lambda x: x.transpose(1, 2), (q, k, v))

        cos, sin = precompute_cos_sin(seqlen, self.head_dim, self.rope_base, x.device)
        q = apply_rotary_emb(q, cos, sin)

        k = k.repeat_interleave(self.n_head // self.n_local_heads, dim=1)
        v = v.repeat_interleave(self.n_head // self.n_local_heads, dim=1)
        mask = torch.tril(torch.ones(seqlen, seqlen, dtype=torch.bool, device=x.device))
        if attention_mask is not None:
            mask = mask & attention_mask[:, None, None, :]
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        att = att.masked_fill(~mask, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        y = y.transpose(1, 2).contiguous().view(bsz, seqlen, self.dim)
        return self.wo(y)

    def feed_forward(self, x: Tensor) -> Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))

    def forward(self, x: Tensor, attention_mask=None) -> Tensor:
        h = x + self.attention(self.attention_norm(x), attention_mask)
        out = h + self.feed_forward(self.ffn_norm(h))
        return out
# bug-line: 69
