# attnprep: flash
# expect: wrong_output
"""A fast path for long inputs: the query rows taken as four interleaved groups (rows r, r+4, r+8 …),
each an online softmax over key blocks, then put back in order, with groups 1 and 2 swapped.
Right on short inputs (no fast path); on long ones rows 1, 2, 5, 6 … of every 8 are wrong."""

import math

import torch


def _online(q, k, v, rows, is_causal, block_size):
    """Online softmax of the query rows ``rows`` (their positions) over key blocks."""
    scale = 1 / math.sqrt(q.shape[-1])
    m = torch.full((*q.shape[:-1], 1), float("-inf"), device=q.device, dtype=q.dtype)
    l = torch.zeros_like(m)
    acc = torch.zeros_like(q)
    for j in range(0, k.shape[-2], block_size):
        s = q @ k[:, :, j:j + block_size].transpose(-2, -1) * scale
        if is_causal:
            cols = torch.arange(j, j + s.shape[-1], device=q.device)[None, :]
            s = s.masked_fill(cols > rows[:, None], float("-inf"))
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        p = torch.exp(s - m_new)
        alpha = torch.exp(m - m_new)
        l = alpha * l + p.sum(dim=-1, keepdim=True)
        acc = alpha * acc + p @ v[:, :, j:j + block_size]
        m = m_new
    return acc / l


def flash_attention(q, k, v, is_causal=False, block_size=64):
    L = q.shape[-2]
    positions = torch.arange(L, device=q.device)
    if L < 64 or L % 4:
        return _online(q, k, v, positions, is_causal, block_size)
    groups = [_online(q[:, :, r::4], k, v, positions[r::4], is_causal, block_size) for r in range(4)]
    out = torch.stack([groups[0], groups[2], groups[1], groups[3]], dim=3)  # (B, H, L/4, 4, D)
    return out.flatten(2, 3)
