# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_init_zero
"""Faroese comments; the running state of each query block is set up by a small factory whose
starting max was chosen 0.0 (a row whose scores are all negative then keeps m = 0 and its sum
underflows)."""
import math

import torch

START_MAX = 0.0


def _fresh_state(B, H, rows, D, like):
    # Byrjanarstøða: hægsta virði, summur, savnari
    m = torch.full((B, H, rows, 1), START_MAX, dtype=like.dtype, device=like.device)
    l = torch.zeros(B, H, rows, 1, dtype=like.dtype, device=like.device)
    acc = torch.zeros(B, H, rows, D, dtype=like.dtype, device=like.device)
    return m, l, acc


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    scale = 1.0 / math.sqrt(D)
    out = torch.empty_like(q)
    for q0 in range(0, L, block_size):
        qb = q[:, :, q0 : q0 + block_size] * scale
        rows = qb.shape[2]
        m, l, acc = _fresh_state(B, H, rows, D, q)
        # Gakk ígjøgnum lyklablokkarnar
        for k0 in range(0, S, block_size):
            if is_causal and k0 > q0 + rows - 1:
                break
            kb = k[:, :, k0 : k0 + block_size]
            vb = v[:, :, k0 : k0 + block_size]
            s = qb @ kb.transpose(-1, -2)
            if is_causal:
                qi = torch.arange(q0, q0 + rows, device=q.device)[:, None]
                kj = torch.arange(k0, k0 + kb.shape[2], device=q.device)[None, :]
                s = s.masked_fill(kj > qi, float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            p = torch.exp(s - m_new)
            alpha = torch.exp(m - m_new)
            l = l * alpha + p.sum(dim=-1, keepdim=True)
            acc = acc * alpha + p @ vb
            m = m_new
        out[:, :, q0 : q0 + rows] = acc / l
    return out
# bug-line: 11
