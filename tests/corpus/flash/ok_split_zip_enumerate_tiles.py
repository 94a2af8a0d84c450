# attnprep: flash
# expect: passed
"""Correct: the tiles come from Tensor.split(block_size, dim=2) on q, k and v zipped together, the
causal skip and the per-tile mask from the tiles' start offsets kept by enumerate, the running max
initialised from the first tile rather than -inf (the loop body then needs no special case), the
rescaling with exp of the max difference, and one division at the end."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    D = q.shape[-1]
    scale = 1.0 / math.sqrt(D)
    results = []
    for qi, q_tile in enumerate(q.split(block_size, dim=2)):
        q0 = qi * block_size
        rows = torch.arange(q0, q0 + q_tile.shape[2], device=q.device)[:, None]
        m = l = acc = None
        for kj, (k_tile, v_tile) in enumerate(zip(k.split(block_size, dim=2), v.split(block_size, dim=2))):
            k0 = kj * block_size
            if is_causal and k0 > rows[-1, 0]:
                break
            s = (q_tile @ k_tile.transpose(-1, -2)) * scale
            if is_causal:
                cols = torch.arange(k0, k0 + k_tile.shape[2], device=q.device)[None, :]
                s = s.masked_fill(cols > rows, float("-inf"))
            tile_max = s.amax(-1, keepdim=True)
            if m is None:
                m = tile_max
                p = torch.exp(s - m)
                l, acc = p.sum(-1, keepdim=True), p @ v_tile
                continue
            m_new = torch.maximum(m, tile_max)
            p = torch.exp(s - m_new)
            r = torch.exp(m - m_new)
            l = r * l + p.sum(-1, keepdim=True)
            acc = r * acc + p @ v_tile
            m = m_new
        results.append(acc / l)
    return torch.cat(results, dim=2)
