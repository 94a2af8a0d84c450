# attnprep: flash
# expect: wrong_output
# diagnosis: flash_causal_off_by_one
"""Two passes per query block: the first computes each key block's row maxima and turns them into
running maxima with torch.cummax, the second accumulates with those precomputed maxima (the
rescale factor is the ratio of consecutive running maxima); the causal test in a small predicate
function."""
import math

import torch


def blocked(rows, cols):
    return cols >= rows


def tile_scores(q_blk, k, j, bs, i, is_causal, scale):
    s = q_blk @ k[:, :, j:j + bs].transpose(-2, -1) * scale
    if is_causal:
        rows = torch.arange(i, i + q_blk.shape[2], device=q_blk.device)[:, None]
        cols = torch.arange(j, j + s.shape[-1], device=q_blk.device)[None, :]
        s = s.masked_fill(blocked(rows, cols), float("-inf"))
    return s


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    scale = D ** -0.5
    outs = []
    for i in range(0, L, block_size):
        q_blk = q[:, :, i:i + block_size]
        starts = [j for j in range(0, S, block_size) if not (is_causal and j > i + q_blk.shape[2] - 1)]
        maxima = torch.stack([tile_scores(q_blk, k, j, block_size, i, is_causal, scale).amax(-1) for j in starts], dim=-1)
        running = torch.cummax(maxima, dim=-1).values  # (B, H, bq, nblocks)
        acc = torch.zeros(B, H, q_blk.shape[2], D, dtype=q.dtype, device=q.device)
        denom = torch.zeros(B, H, q_blk.shape[2], 1, dtype=q.dtype, device=q.device)
        prev = None
        for n, j in enumerate(starts):
            m = running[..., n:n + 1]
            s = tile_scores(q_blk, k, j, block_size, i, is_causal, scale)
            p = torch.exp(s - m)
            if prev is not None:
                alpha = torch.exp(prev - m)
                acc, denom = acc * alpha, denom * alpha
            acc = acc + p @ v[:, :, j:j + block_size]
            denom = denom + p.sum(-1, keepdim=True)
            prev = m
        outs.append(acc / denom)
    return torch.cat(outs, dim=2)
# bug-line: 14
