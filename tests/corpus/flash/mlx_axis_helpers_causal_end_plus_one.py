# attnprep: flash
# expect: mask_leak
# diagnosis: flash_causal_off_by_one
"""MLX habits ported: mx-style helpers with `axis=` / `keepdims=` (mx_max, mx_sum, mx_exp), a
`maximum` alias, queries pre-scaled once, the causal tiles handled as MLX's steel attention does
(skip the key blocks after the query block, mask only the tile on the diagonal). The key loop's
bound adds one "because range excludes its end": for every query block but the last, the block just
after the diagonal is visited, and it is not masked."""

import math

import torch

maximum = torch.maximum


def mx_max(a, axis, keepdims=True):
    return a.amax(dim=axis, keepdim=keepdims)


def mx_sum(a, axis, keepdims=True):
    return a.sum(dim=axis, keepdim=keepdims)


mx_exp = torch.exp


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    q = q * (1.0 / math.sqrt(D))
    outs = []
    for i in range(0, L, block_size):
        qb = q[:, :, i:i + block_size]
        bq = qb.shape[2]
        m = torch.full((B, H, bq, 1), -float("inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros((B, H, bq, 1), dtype=q.dtype, device=q.device)
        o = torch.zeros((B, H, bq, D), dtype=q.dtype, device=q.device)
        kv_end = min(S, i + bq + 1) if is_causal else S
        for j in range(0, kv_end, block_size):
            kb, vb = k[:, :, j:j + block_size], v[:, :, j:j + block_size]
            s = qb @ kb.transpose(-1, -2)  # (B, H, bq, bk)
            if is_causal and j == i:
                rows = torch.arange(bq, device=q.device)[:, None]
                cols = torch.arange(kb.shape[2], device=q.device)[None, :]
                s = s.masked_fill(cols > rows, -float("inf"))
            m_new = maximum(m, mx_max(s, axis=-1))
            p = mx_exp(s - m_new)
            corr = mx_exp(m - m_new)
            l = corr * l + mx_sum(p, axis=-1)
            o = corr * o + p @ vb
            m = m_new
        outs.append(o / l)
    return torch.cat(outs, dim=2)
# bug-line: 39
