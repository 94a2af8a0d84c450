# attnprep: kv_cache
# expect: passed
"""vLLM's paged-attention reference (ref_single_query_cached_kv_attention) inside a stateless module:
the past keys are cut into blocks of block_size tokens, a block_table lists them, and each query
gathers its keys token by token through block_number = block_table[pos // block_size],
block_offset = pos % block_size; the returned cache is the contiguous (B, KV, S, D): correct."""

import torch
import torch.nn as nn

BLOCK_SIZE = 4


def to_blocks(t, block_size):
    # (KV, S, D) -> (num_blocks, KV, block_size, D), the last block zero-padded
    KV, S, D = t.shape
    n = -(-S // block_size)
    padded = t.new_zeros(KV, n * block_size, D)
    padded[:, :S] = t
    return padded.view(KV, n, block_size, D).transpose(0, 1)


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_size = d_model // num_heads
        self.num_queries_per_kv = num_heads // num_kv_heads
        self.scale = float(1.0 / (self.head_size ** 0.5))
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_size)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_size)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_size)
        k = self.k_proj(x).view(B, T, self.num_kv_heads, self.head_size).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.num_kv_heads, self.head_size).transpose(1, 2)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        S = k.shape[2]
        context_len0 = S - T
        outputs = []
        for i in range(B):
            key_cache, value_cache = to_blocks(k[i], BLOCK_SIZE), to_blocks(v[i], BLOCK_SIZE)
            block_table = list(range(key_cache.shape[0]))
            rows = []
            for t in range(T):
                context_len = context_len0 + t + 1
                keys, values = [], []
                for j in range(context_len):
                    block_number = block_table[j // BLOCK_SIZE]
                    block_offset = j % BLOCK_SIZE
                    keys.append(key_cache[block_number, :, block_offset])
                    values.append(value_cache[block_number, :, block_offset])
                keys = torch.stack(keys, dim=0).repeat_interleave(self.num_queries_per_kv, dim=1)  # (ctx, H, D)
                values = torch.stack(values, dim=0).repeat_interleave(self.num_queries_per_kv, dim=1)
                attn = torch.einsum("hd,khd->hk", q[i, t] * self.scale, keys).softmax(dim=-1)
                rows.append(torch.einsum("hk,khd->hd", attn, values).reshape(C))
            outputs.append(torch.stack(rows))
        return self.o_proj(torch.stack(outputs)), (k, v)
