# attnprep: flash
# expect: wrong_output
# diagnosis: flash_causal_local_mask
"""The causal mask of every tile is the tile's own triu(1), as if each tile started on the diagonal."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[-2]
    outputs = []
    for i in range(0, L, block_size):
        q_tile = q[:, :, i:i + block_size] / math.sqrt(D)
        rows = q_tile.shape[-2]
        m = torch.full((B, H, rows, 1), -math.inf, dtype=q.dtype, device=q.device)
        l = torch.zeros(B, H, rows, 1, dtype=q.dtype, device=q.device)
        o = torch.zeros(B, H, rows, D, dtype=q.dtype, device=q.device)
        for j in range(0, S, block_size):
            if is_causal and j >= i + rows:
                break
            k_tile, v_tile = k[:, :, j:j + block_size], v[:, :, j:j + block_size]
            s = q_tile @ k_tile.transpose(-2, -1)
            if is_causal:
                future = torch.ones(rows, k_tile.shape[-2], dtype=torch.bool, device=q.device).triu(1)
                s = s.masked_fill(future, -math.inf)
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            p = torch.exp(s - m_new)
            alpha = torch.exp(m - m_new)
            l = alpha * l + p.sum(dim=-1, keepdim=True)
            o = alpha * o + p @ v_tile
            m = m_new
        outputs.append(o / l)
    return torch.cat(outputs, dim=2)
# bug-line: 27
