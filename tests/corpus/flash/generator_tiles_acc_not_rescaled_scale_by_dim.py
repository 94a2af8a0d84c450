# attnprep: flash
# expect: wrong_output
# diagnosis: flash_acc_not_rescaled + scale_by_dim
"""Generator expressions everywhere: `tiles()` yields (start, k_tile, v_tile) lazily, the query
blocks are produced by a generator consumed by torch.cat, and `functools.reduce`-free state updates
are written as tuple assignments. Two slips: the scores are scaled by 1/D instead of 1/sqrt(D),
and the accumulator gets the new block's weighted values without its rescale by exp(m_old - m_new)
(the running sum is rescaled)."""

import torch


def tiles(k, v, stop, size):
    yield from ((j, k[:, :, j:j + size], v[:, :, j:j + size]) for j in range(0, stop, size))


def one_query_block(q_tile, i, k, v, is_causal, size):
    B, H, n, D = q_tile.shape
    m = torch.full((B, H, n, 1), float("-inf"), dtype=q_tile.dtype, device=q_tile.device)
    l = torch.zeros((B, H, n, 1), dtype=q_tile.dtype, device=q_tile.device)
    acc = torch.zeros((B, H, n, v.shape[-1]), dtype=q_tile.dtype, device=q_tile.device)
    stop = min(k.shape[2], i + n) if is_causal else k.shape[2]
    for j, k_tile, v_tile in tiles(k, v, stop, size):
        s = q_tile @ k_tile.transpose(-2, -1) / D
        if is_causal:
            r = torch.arange(i, i + n, device=s.device)[:, None]
            c = torch.arange(j, j + k_tile.shape[2], device=s.device)[None, :]
            s = s.masked_fill(c > r, float("-inf"))
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        p = torch.exp(s - m_new)
        l, acc, m = torch.exp(m - m_new) * l + p.sum(-1, keepdim=True), acc + p @ v_tile, m_new
    return acc / l


def flash_attention(q, k, v, is_causal=False, block_size=64):
    L = q.shape[2]
    return torch.cat(
        tuple(one_query_block(q[:, :, i:i + block_size], i, k, v, is_causal, block_size) for i in range(0, L, block_size)),
        dim=2,
    )
# bug-line: 24, 31
