# attnprep: flash
# expect: structure
# diagnosis: flash_row_blocks
"""The operator module for every arithmetic step (operator.matmul, operator.truediv, operator.mul),
a `strip()` helper per query block. Each query block is scored against all S keys at once, a
(block, S) strip, and softmaxed directly: the values are right, the memory is not FlashAttention's
(keys are never tiled, no online softmax)."""

import math
import operator

import torch


def strip(qb, k, v, row0, is_causal):
    s = operator.mul(operator.matmul(qb, k.transpose(-2, -1)), 1 / math.sqrt(qb.shape[-1]))
    if is_causal:
        rows = torch.arange(row0, row0 + qb.shape[2], device=qb.device)[:, None]
        cols = torch.arange(k.shape[2], device=qb.device)[None, :]
        s = s.masked_fill(cols > rows, -math.inf)
    p = torch.softmax(s, dim=-1)
    return operator.matmul(p, v)


def flash_attention(q, k, v, is_causal=False, block_size=64):
    L = q.shape[2]
    return torch.cat([strip(q[:, :, i:i + block_size], k, v, i, is_causal) for i in range(0, L, block_size)], dim=2)
# bug-line: 16
