# attnprep: kv_cache
# expect: passed
"""Correct: Stanford CS336 assignment habits: jaxtyping-style shape strings as annotations
("Float[Tensor, '... seq d_k']", quoted so nothing is imported), a hand-written `softmax(in_features,
dim)`, a `scaled_dot_product_attention(Q, K, V, mask)` whose mask is True where attention is allowed,
`run_*`-style thin adapters, and asserts on every shape."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def softmax(in_features: "Float[Tensor, '...']", dim: int) -> "Float[Tensor, '...']":
    shifted = in_features - in_features.amax(dim=dim, keepdim=True)
    e = shifted.exp()
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(
    Q: "Float[Tensor, '... queries d_k']",
    K: "Float[Tensor, '... keys d_k']",
    V: "Float[Tensor, '... keys d_v']",
    mask: "Bool[Tensor, 'queries keys'] | None" = None,
) -> "Float[Tensor, '... queries d_v']":
    d_k = Q.shape[-1]
    assert K.shape[-1] == d_k
    pre = Q @ K.transpose(-1, -2) / math.sqrt(d_k)
    if mask is not None:
        assert mask.shape[-2:] == pre.shape[-2:]
        pre = pre.masked_fill(~mask, float("-inf"))
    return softmax(pre, dim=-1) @ V


def run_split_heads(x: "Float[Tensor, 'b seq d']", n: int) -> "Float[Tensor, 'b n seq hd']":
    b, s, d = x.shape
    assert d % n == 0
    return x.view(b, s, n, d // n).permute(0, 2, 1, 3)


class KVCacheAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int):
        super().__init__()
        assert num_heads % num_kv_heads == 0
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.d_k = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d_k)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d_k)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(
        self,
        x: "Float[Tensor, 'b new d_model']",
        cache: "tuple[Float[Tensor, 'b kv past hd'], Float[Tensor, 'b kv past hd']] | None" = None,
    ):
        b, new, d_model = x.shape
        Q = run_split_heads(self.q_proj(x), self.num_heads)
        K = run_split_heads(self.k_proj(x), self.num_kv_heads)
        V = run_split_heads(self.v_proj(x), self.num_kv_heads)
        past = 0
        if cache is not None:
            past = cache[0].shape[-2]
            assert cache[0].shape == (b, self.num_kv_heads, past, self.d_k)
            K = torch.cat((cache[0], K), dim=-2)
            V = torch.cat((cache[1], V), dim=-2)
        total = past + new
        assert K.shape == (b, self.num_kv_heads, total, self.d_k)
        g = self.num_heads // self.num_kv_heads
        Q = Q.reshape(b, self.num_kv_heads, g, new, self.d_k)  # query heads grouped under their kv head
        qpos = torch.arange(past, total, device=x.device)
        kpos = torch.arange(total, device=x.device)
        mask = kpos[None, :] <= qpos[:, None]  # (new, total)
        out = scaled_dot_product_attention(Q, K[:, :, None], V[:, :, None], mask)  # (b, kv, g, new, hd)
        assert out.shape == (b, self.num_kv_heads, g, new, self.d_k)
        out = out.reshape(b, self.num_heads, new, self.d_k).permute(0, 2, 1, 3).reshape(b, new, d_model)
        return self.o_proj(out), (K, V)
