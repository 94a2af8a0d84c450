# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_not_carried
"""Interview notes style: the running max is re-initialised inside the key loop, so every key
block starts from -inf and what came before is thrown away by exp(-inf - m)."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[-2]
    o = torch.empty_like(q)
    for i in range(0, L, block_size):
        qb = q[:, :, i:i + block_size]
        n = qb.shape[2]
        l = torch.zeros(B, H, n, 1, device=q.device)
        acc = torch.zeros(B, H, n, D, device=q.device)
        for j in range(0, S, block_size):
            if is_causal and j >= i + n:
                break
            m = torch.full((B, H, n, 1), float("-inf"), device=q.device)  # running max
            kb, vb = k[:, :, j:j + block_size], v[:, :, j:j + block_size]
            s = qb @ kb.transpose(-1, -2) / math.sqrt(D)
            if is_causal:
                r = torch.arange(i, i + n, device=q.device)[:, None]
                c = torch.arange(j, j + kb.shape[2], device=q.device)[None, :]
                s = s.masked_fill(c > r, float("-inf"))
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            p = torch.exp(s - m_new)
            scale = torch.exp(m - m_new)
            l = scale * l + p.sum(-1, keepdim=True)
            acc = scale * acc + p @ vb
            m = m_new
        o[:, :, i:i + n] = acc / l
    return o
