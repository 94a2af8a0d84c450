# attnprep: flash
# expect: passed
"""Correct: query and key blocks from torch.split, their start offsets by itertools.accumulate, a
causal early `break` once a key block starts past the query block's last row, the state (m, l, acc)
updated by a small step function returning the new (m, l, acc) tuple, normalised once at the end."""

import itertools
import math

import torch


def _step(state, s, v_blk):
    m, l, acc = state
    m_new = torch.maximum(m, s.amax(-1, keepdim=True))
    p = torch.exp(s - m_new)
    corr = torch.exp(m - m_new)
    return m_new, corr * l + p.sum(-1, keepdim=True), corr * acc + p @ v_blk


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    scale = 1.0 / math.sqrt(D)
    q_blocks, k_blocks, v_blocks = q.split(block_size, 2), k.split(block_size, 2), v.split(block_size, 2)
    q_starts = [0, *itertools.accumulate(b.shape[2] for b in q_blocks)]
    k_starts = [0, *itertools.accumulate(b.shape[2] for b in k_blocks)]
    outs = []
    for qi, q_blk in enumerate(q_blocks):
        r0, bq = q_starts[qi], q_blk.shape[2]
        state = (q.new_full((B, H, bq, 1), -math.inf), q.new_zeros(B, H, bq, 1), q.new_zeros(B, H, bq, D))
        for kj, (k_blk, v_blk) in enumerate(zip(k_blocks, v_blocks)):
            c0 = k_starts[kj]
            if is_causal and c0 > r0 + bq - 1:
                break
            s = (q_blk @ k_blk.transpose(-1, -2)) * scale
            if is_causal:
                rows = torch.arange(r0, r0 + bq, device=q.device)[:, None]
                cols = torch.arange(c0, c0 + k_blk.shape[2], device=q.device)[None, :]
                s = s.masked_fill(cols > rows, -math.inf)
            state = _step(state, s, v_blk)
        m, l, acc = state
        outs.append(acc / l)
    return torch.cat(outs, 2)
