# attnprep: flash
# expect: wrong_output
# diagnosis: flash_sum_not_rescaled
"""A C programmer's FlashAttention: the state arrays (m, l, o) allocated once per query block and
updated through out-parameter helpers that write in place (`update_max_(m, m_new)`), loop bounds
computed up front (`nq = (L + bs - 1) // bs`), the tile bounds as integer pairs."""
import math

import torch


def ceil_div(a, b):
    return (a + b - 1) // b


def update_max_(m, m_new):
    m.copy_(m_new)


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    bs = block_size
    nq = ceil_div(L, bs)
    nk = ceil_div(S, bs)
    sm_scale = 1.0 / math.sqrt(D)
    out = torch.empty_like(q)
    for qi in range(nq):
        q0 = qi * bs
        q1 = min(q0 + bs, L)
        qt = q[:, :, q0:q1]
        m = torch.full((B, H, q1 - q0, 1), -math.inf, dtype=q.dtype, device=q.device)
        l = torch.zeros((B, H, q1 - q0, 1), dtype=q.dtype, device=q.device)
        o = torch.zeros((B, H, q1 - q0, D), dtype=q.dtype, device=q.device)
        for ki in range(nk):
            k0 = ki * bs
            k1 = min(k0 + bs, S)
            if is_causal and k0 > q1 - 1:
                break
            s = torch.matmul(qt, k[:, :, k0:k1].transpose(-1, -2)) * sm_scale
            if is_causal:
                rows = torch.arange(q0, q1, device=q.device).view(-1, 1)
                cols = torch.arange(k0, k1, device=q.device).view(1, -1)
                s = s.masked_fill(cols > rows, -math.inf)
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            p = torch.exp(s - m_new)
            corr = torch.exp(m - m_new)
            l = l + p.sum(dim=-1, keepdim=True)
            o = o * corr + torch.matmul(p, v[:, :, k0:k1])
            update_max_(m, m_new)
        out[:, :, q0:q1] = o / l
    return out
# bug-line: 48
