# attnprep: flash
# expect: wrong_output
# diagnosis: flash_sum_not_rescaled
"""C-style while loops over query and key tiles (start / end indices advanced by hand), Russian
comments, the output written tile by tile into a preallocated tensor."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[-2]
    scale = 1.0 / math.sqrt(D)
    out = torch.empty_like(q)
    qs = 0
    while qs < L:  # по блокам запросов
        qe = min(qs + block_size, L)
        qb = q[:, :, qs:qe] * scale
        m = torch.full((B, H, qe - qs, 1), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros(B, H, qe - qs, 1, dtype=q.dtype, device=q.device)
        acc = torch.zeros(B, H, qe - qs, D, dtype=q.dtype, device=q.device)
        ks = 0
        while ks < S:  # по блокам ключей
            ke = min(ks + block_size, S)
            if is_causal and ks > qe - 1:
                break  # весь блок в будущем
            s = qb @ k[:, :, ks:ke].transpose(-1, -2)
            if is_causal:
                qi = torch.arange(qs, qe, device=q.device)[:, None]
                kj = torch.arange(ks, ke, device=q.device)[None, :]
                s = s.masked_fill(kj > qi, float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            p = torch.exp(s - m_new)
            alpha = torch.exp(m - m_new)  # поправка старых сумм
            l = l + p.sum(dim=-1, keepdim=True)
            acc = acc * alpha + p @ v[:, :, ks:ke]
            m = m_new
            ks = ke
        out[:, :, qs:qe] = acc / l
        qs = qe
    return out
# bug-line: 36
