"""Grouped-query attention with a KV cache: prefill once, then decode token by token.

A call gets the next tokens x and the cache of everything before them, (k, v) of the num_kv_heads
key/value heads for positions 0 .. T_past-1. Only the new tokens are projected; their keys and
values are appended to the cache after the old ones, on the token axis, and the new queries attend
over the whole cache. New token t sits at absolute position T_past + t, so the causal mask is
offset by T_past: it sees keys 0 .. T_past + t. The cache is stored before repeat_kv (num_kv_heads
heads, not num_heads) and returned; the module itself keeps no state between calls.
num_kv_heads = num_heads is multi-head attention with a cache, num_kv_heads = 1 multi-query.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class KVCacheAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int):
        super().__init__()
        assert d_model % num_heads == 0, "d_model must be divisible by num_heads"
        assert num_heads % num_kv_heads == 0, "num_heads must be divisible by num_kv_heads"
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(
        self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        B, T, C = x.shape  # T new tokens
        H, KV, D = self.num_heads, self.num_kv_heads, self.head_dim

        # project the new tokens only: the cache already holds the keys and values of the past
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        k = self.k_proj(x).view(B, T, KV, D).transpose(1, 2)  # (B, KV, T, D)
        v = self.v_proj(x).view(B, T, KV, D).transpose(1, 2)  # (B, KV, T, D)
        if cache is not None:
            past_k, past_v = cache  # (B, KV, T_past, D) each
            k = torch.cat([past_k, k], dim=2)  # (B, KV, T_past + T, D): the old keys first
            v = torch.cat([past_v, v], dim=2)  # (B, KV, T_past + T, D)
        cache = (k, v)  # stored before repeat_kv: KV heads, not H
        S = k.size(2)  # T_past + T keys
        T_past = S - T

        group = H // KV  # query heads per KV head
        k = k.repeat_interleave(group, dim=1)  # (B, H, S, D): heads [k0, k0, k1, k1, ...]
        v = v.repeat_interleave(group, dim=1)  # (B, H, S, D)

        scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, D) @ (B, H, D, S) -> (B, H, T, S)
        # new token t is at position T_past + t and sees keys j <= T_past + t: the causal mask
        # aligned to the bottom right (for one new token every key is allowed)
        allowed = torch.tril(torch.ones(T, S, dtype=torch.bool, device=x.device), diagonal=T_past)  # (T, S)
        scores = scores.masked_fill(~allowed, float("-inf"))
        attn = F.softmax(scores, dim=-1)  # (B, H, T, S), each row sums to 1 over the keys

        out = attn @ v  # (B, H, T, S) @ (B, H, S, D) -> (B, H, T, D)
        out = out.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, H, D) -> (B, T, C)
        return self.o_proj(out), cache  # (B, T, C), ((B, KV, S, D), (B, KV, S, D))
