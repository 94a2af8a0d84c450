# attnprep: flash
# expect: passed
"""torch.where for the causal tile, index_copy_ to place each finished query block, and tails handled
by slicing (T need not be a multiple of block_size); the diagonal tile the only one masked."""
import math
import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[-2]
    out = torch.zeros(B, H, L, v.shape[-1], dtype=q.dtype, device=q.device)
    neg_inf = torch.tensor(float("-inf"), dtype=q.dtype, device=q.device)
    for qs in range(0, L, block_size):
        qe = min(qs + block_size, L)
        qb = q[:, :, qs:qe] * (1.0 / math.sqrt(D))
        m = torch.full((B, H, qe - qs), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros(B, H, qe - qs, dtype=q.dtype, device=q.device)
        acc = torch.zeros(B, H, qe - qs, v.shape[-1], dtype=q.dtype, device=q.device)
        kend = min(qe, S) if is_causal else S
        for ks in range(0, kend, block_size):
            ke = min(ks + block_size, S)
            s = torch.einsum("bhqd,bhkd->bhqk", qb, k[:, :, ks:ke])
            if is_causal and ke - 1 > qs:
                ok = torch.arange(ks, ke, device=q.device)[None, :] <= torch.arange(qs, qe, device=q.device)[:, None]
                s = torch.where(ok, s, neg_inf)
            m_new = torch.maximum(m, s.amax(-1))
            p = torch.exp(s - m_new[..., None])
            scale_old = torch.exp(m - m_new)
            l = l * scale_old + p.sum(-1)
            acc = acc * scale_old[..., None] + torch.einsum("bhqk,bhkd->bhqd", p, v[:, :, ks:ke])
            m = m_new
        out.index_copy_(2, torch.arange(qs, qe, device=q.device), acc / l[..., None])
    return out
