# attnprep: flash
# expect: structure
# diagnosis: flash_row_blocks
"""Queries cut into blocks, keys not: a (block, S) row of scores and a plain softmax per block.
Right outputs, memory still O(block·S), and no online softmax."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    L, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
    out = torch.empty_like(q)
    for i in range(0, L, block_size):
        s = q[:, :, i:i + block_size] @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, block, S)
        if is_causal:
            rows = torch.arange(i, min(i + block_size, L), device=q.device)[:, None]
            s = s.masked_fill(torch.arange(S, device=q.device)[None, :] > rows, float("-inf"))
        out[:, :, i:i + block_size] = torch.softmax(s, dim=-1) @ v
    return out
