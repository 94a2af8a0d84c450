# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_updated_before_rescale
"""Doctest-documented helpers (`>>> tile_bounds(130, 64)` lists the tiles), one function per step of
the online softmax (`new_max`, `correction`, `accumulate`), the state in three local names. The
running max is overwritten with the new max before the correction factor is taken from it, so the
correction is always exp(0) = 1 and nothing accumulated is rescaled."""

import math

import torch


def tile_bounds(n, size):
    """Start and end of each tile.

    >>> tile_bounds(130, 64)
    [(0, 64), (64, 128), (128, 130)]
    """
    return [(i, min(i + size, n)) for i in range(0, n, size)]


def new_max(m, s):
    """Running max after a tile of scores s.

    >>> new_max(torch.tensor([[1.0]]), torch.tensor([[0.0, 3.0]]))
    tensor([[3.]])
    """
    return torch.maximum(m, s.amax(dim=-1, keepdim=True))


def correction(m_old, m_new):
    """exp(m_old - m_new): what the old sums are worth under the new max.

    >>> correction(torch.tensor([1.0]), torch.tensor([1.0]))
    tensor([1.])
    """
    return torch.exp(m_old - m_new)


def accumulate(acc, l, alpha, p, v):
    return alpha * acc + p @ v, alpha * l + p.sum(dim=-1, keepdim=True)


def flash_attention(q, k, v, is_causal=False, block_size=64):
    """softmax(q kᵀ / sqrt(D)) v by tiles; q (B, H, L, D), k and v (B, H, S, D)."""
    B, H, L, D = q.shape
    S = k.shape[2]
    outs = []
    for qs, qe in tile_bounds(L, block_size):
        qt = q[:, :, qs:qe] / math.sqrt(D)
        m = torch.full((B, H, qe - qs, 1), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros(B, H, qe - qs, 1, dtype=q.dtype, device=q.device)
        acc = torch.zeros(B, H, qe - qs, D, dtype=q.dtype, device=q.device)
        for ks, ke in tile_bounds(S, block_size):
            if is_causal and ks > qe - 1:
                break
            s = qt @ k[:, :, ks:ke].transpose(-1, -2)
            if is_causal and ke - 1 > qs:
                r = torch.arange(qs, qe, device=q.device)[:, None]
                c = torch.arange(ks, ke, device=q.device)[None, :]
                s = s.masked_fill(c > r, float("-inf"))
            m_next = new_max(m, s)
            m = m_next
            alpha = correction(m, m_next)
            p = torch.exp(s - m_next)
            acc, l = accumulate(acc, l, alpha, p, v[:, :, ks:ke])
        outs.append(acc / l)
    return torch.cat(outs, dim=2)
# bug-line: 64, 65
