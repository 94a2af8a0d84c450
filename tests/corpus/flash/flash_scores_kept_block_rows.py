# attnprep: flash
# expect: structure
# diagnosis: flash_scores_kept
"""Query blocks and key blocks, but a two-pass softmax inside each query block: the block's
(block, block) score tiles are kept in a list until the max and the sum over all keys are known.
No single tensor is large, but each query block holds (block, S) scores at once."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    L, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
    out = torch.empty_like(q)
    for i in range(0, L, block_size):
        qi = q[:, :, i:i + block_size] / math.sqrt(D)
        rows = torch.arange(i, i + qi.shape[-2], device=q.device)[:, None]
        tiles = []
        for j in range(0, S, block_size):
            s = qi @ k[:, :, j:j + block_size].transpose(-2, -1)
            if is_causal:
                cols = torch.arange(j, j + s.shape[-1], device=q.device)[None, :]
                s = s.masked_fill(cols > rows, float("-inf"))
            tiles.append(s)
        m = torch.stack([t.amax(dim=-1) for t in tiles], dim=-1).amax(dim=-1, keepdim=True)  # (B, H, block, 1)
        l = sum(torch.exp(t - m).sum(dim=-1, keepdim=True) for t in tiles)
        acc = sum(torch.exp(t - m) @ v[:, :, j:j + block_size] for t, j in zip(tiles, range(0, S, block_size)))
        out[:, :, i:i + block_size] = acc / l
    return out
