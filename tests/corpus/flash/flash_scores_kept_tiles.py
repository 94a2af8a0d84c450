# attnprep: flash
# expect: structure
# diagnosis: flash_scores_kept
"""Two passes over key blocks, as in many blog posts: the first computes every (L, block) score tile
and the row max and sum, the second reuses the tiles from a list. Right outputs, no tile larger than
the bound, but the list holds the whole (L, S) score matrix at once."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    L, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = 1 / math.sqrt(D)
    rows = torch.arange(L, device=q.device)[:, None]
    tiles = []
    m = torch.full((*q.shape[:-1], 1), float("-inf"), device=q.device, dtype=q.dtype)
    for j in range(0, S, block_size):
        s = q @ k[:, :, j:j + block_size].transpose(-2, -1) * scale  # (B, H, L, block)
        if is_causal:
            cols = torch.arange(j, min(j + block_size, S), device=q.device)[None, :]
            s = s.masked_fill(cols > rows, float("-inf"))
        tiles.append(s)
        m = torch.maximum(m, s.amax(dim=-1, keepdim=True))
    l = torch.zeros_like(m)
    out = torch.zeros_like(q)
    for n, j in enumerate(range(0, S, block_size)):
        p = torch.exp(tiles[n] - m)
        l = l + p.sum(dim=-1, keepdim=True)
        out = out + p @ v[:, :, j:j + block_size]
    return out / l
