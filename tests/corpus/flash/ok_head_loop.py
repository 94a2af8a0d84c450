# attnprep: flash
# expect: passed
"""Loop over (batch, head) pairs with 2-D tiles, the way a CUDA block per (b, h) thinks; key blocks
outside, query blocks inside (FA1 order) with per-row statistics kept in (L,) vectors."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    out = torch.empty_like(q)
    c = 1.0 / math.sqrt(D)
    for b in range(B):
        for h in range(H):
            Qh, Kh, Vh = q[b, h], k[b, h], v[b, h]
            O = torch.zeros(L, D, dtype=q.dtype, device=q.device)
            l = torch.zeros(L, 1, dtype=q.dtype, device=q.device)
            m = torch.full((L, 1), float("-inf"), dtype=q.dtype, device=q.device)
            for j in range(0, S, block_size):
                Kj, Vj = Kh[j:j + block_size], Vh[j:j + block_size]
                for i in range(0, L, block_size):
                    if is_causal and j > i + block_size - 1:
                        continue
                    Sij = (Qh[i:i + block_size] @ Kj.T) * c
                    if is_causal:
                        qi = torch.arange(i, i + Sij.shape[0], device=q.device).unsqueeze(1)
                        kj = torch.arange(j, j + Sij.shape[1], device=q.device).unsqueeze(0)
                        Sij = Sij.masked_fill(kj > qi, float("-inf"))
                    mi, li, Oi = m[i:i + block_size], l[i:i + block_size], O[i:i + block_size]
                    mnew = torch.maximum(mi, Sij.max(dim=1, keepdim=True).values)
                    Pij = torch.exp(Sij - mnew)
                    a = torch.exp(mi - mnew)
                    O[i:i + block_size] = Oi * a + Pij @ Vj
                    l[i:i + block_size] = li * a + Pij.sum(dim=1, keepdim=True)
                    m[i:i + block_size] = mnew
            out[b, h] = O / l
    return out
