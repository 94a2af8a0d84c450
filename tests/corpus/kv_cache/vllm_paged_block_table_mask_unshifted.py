# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_mask_not_offset
"""vLLM's mental model, one sequence group: the past lives in fixed-size blocks found through a block table,
gathered back into contiguous K/V before the attention (PagedAttention's reference path)."""
import math

import torch
import torch.nn as nn

BLOCK_SIZE = 4


def to_blocks(t: torch.Tensor) -> tuple[torch.Tensor, list[int], int]:
    """(B, KV, S, D) -> key_cache (num_blocks, B, KV, BLOCK_SIZE, D), a block table, the number of slots used."""
    B, KV, S, D = t.shape
    n = -(-S // BLOCK_SIZE)
    padded = t.new_zeros(B, KV, n * BLOCK_SIZE, D)
    padded[:, :, :S] = t
    blocks = padded.view(B, KV, n, BLOCK_SIZE, D).permute(2, 0, 1, 3, 4)
    return blocks, list(range(n)), S


def from_blocks(blocks: torch.Tensor, block_table: list[int], num_slots: int) -> torch.Tensor:
    picked = blocks[block_table]  # (n, B, KV, BLOCK_SIZE, D)
    n, B, KV, bs, D = picked.shape
    return picked.permute(1, 2, 0, 3, 4).reshape(B, KV, n * bs, D)[:, :, :num_slots]


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_size = d_model // num_heads
        self.num_queries_per_kv = num_heads // num_kv_heads
        self.scale = 1.0 / math.sqrt(self.head_size)
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_size)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_size)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_size).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.num_kv_heads, self.head_size).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.num_kv_heads, self.head_size).transpose(1, 2)
        if cache is not None:
            key_cache, block_table, used = to_blocks(cache[0])
            value_cache, _, _ = to_blocks(cache[1])
            k = torch.cat([from_blocks(key_cache, block_table, used), k], dim=2)
            v = torch.cat([from_blocks(value_cache, block_table, used), v], dim=2)
        S = k.shape[2]
        new_cache = (k, v)
        k = torch.repeat_interleave(k, self.num_queries_per_kv, dim=1)
        v = torch.repeat_interleave(v, self.num_queries_per_kv, dim=1)
        attn = torch.einsum("bhqd,bhkd->bhqk", q, k) * self.scale
        # prefill / chunked prefill: query i may not see a later key
        mask = torch.triu(torch.ones(T, S, dtype=torch.bool, device=x.device), diagonal=1)
        attn = attn.masked_fill(mask, torch.finfo(attn.dtype).min)
        attn = attn.softmax(dim=-1)
        out = torch.einsum("bhqk,bhkd->bhqd", attn, v)
        out = out.transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out), new_cache
# bug-line: 59
