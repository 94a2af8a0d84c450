# attnprep: flash
# expect: passed
"""Own names, in-place updates of preallocated statistics (as a kernel keeps them in registers),
the causal mask only on the diagonal block with a local triu, the default block size unchanged."""

import math

import torch


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool = False,
                    block_size: int = 64) -> torch.Tensor:
    batch, heads, n_q, dim = q.shape
    n_k = k.shape[-2]
    out = torch.empty_like(q)
    for qb, q0 in enumerate(range(0, n_q, block_size)):
        q_tile = q[:, :, q0:q0 + block_size]
        rows = q_tile.shape[-2]
        row_max = torch.full((batch, heads, rows, 1), -torch.inf, dtype=q.dtype, device=q.device)
        row_sum = torch.zeros_like(row_max)
        o_tile = torch.zeros_like(q_tile)
        for kb, k0 in enumerate(range(0, n_k, block_size)):
            if is_causal and k0 >= q0 + rows:
                continue
            k_tile = k[:, :, k0:k0 + block_size]
            s = torch.matmul(q_tile, k_tile.transpose(-1, -2)).div_(math.sqrt(dim))
            if is_causal and k0 + k_tile.shape[-2] > q0 + 1:
                future = torch.ones(rows, k_tile.shape[-2], dtype=torch.bool, device=q.device).triu(q0 - k0 + 1)
                s.masked_fill_(future, -torch.inf)
            new_max = torch.maximum(row_max, s.amax(dim=-1, keepdim=True))
            s.sub_(new_max).exp_()
            scale = torch.exp(row_max - new_max)
            row_sum.mul_(scale).add_(s.sum(dim=-1, keepdim=True))
            o_tile.mul_(scale).add_(s @ v[:, :, k0:k0 + block_size])
            row_max = new_max
        out[:, :, q0:q0 + rows] = o_tile / row_sum
    return out
