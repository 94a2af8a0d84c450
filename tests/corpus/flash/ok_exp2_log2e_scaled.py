# attnprep: flash
# expect: passed
"""Correct: FlashAttention-2's exp2 trick with log2(e) folded into the scale, rescale via exp2(m_old - m_new),
causal blocks skipped past the diagonal, the tile mask from torch.triu with an offset."""
import math
import torch

LOG2E = 1.4426950408889634


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    qk_scale = LOG2E / math.sqrt(D)
    result = []
    for qs in range(0, L, block_size):
        Q = q[:, :, qs:qs + block_size]
        R = Q.shape[2]
        m = Q.new_full((B, H, R), -float("inf"))
        l = Q.new_zeros((B, H, R))
        o = Q.new_zeros((B, H, R, D))
        for ks in range(0, S, block_size):
            if is_causal and ks > qs + R - 1:
                break
            K = k[:, :, ks:ks + block_size]
            V = v[:, :, ks:ks + block_size]
            x = torch.einsum("bhrd,bhcd->bhrc", Q, K) * qk_scale
            if is_causal:
                tile = torch.ones(R, K.shape[2], dtype=torch.bool, device=q.device).triu(qs - ks + 1)
                x = x.masked_fill(tile, -float("inf"))
            m2 = torch.maximum(m, x.amax(-1))
            p = torch.exp2(x - m2[..., None])
            c = torch.exp2(m - m2)
            l = l * c + p.sum(-1)
            o = o * c[..., None] + torch.einsum("bhrc,bhcd->bhrd", p, V)
            m = m2
        result.append(o / l[..., None])
    return torch.cat(result, dim=2)
