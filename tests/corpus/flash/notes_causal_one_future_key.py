# attnprep: flash
# expect: mask_leak
# diagnosis: flash_causal_off_by_one
"""Interview notes, terse: per query block, walk key blocks; causal keeps `col <= row + 1`, so each
query also sees the next key."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    # q: B,H,L,D ; k,v: B,H,S,D
    L, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
    res = torch.empty_like(q)
    for qs in range(0, L, block_size):
        qe = min(qs + block_size, L)
        Qb = q[..., qs:qe, :] / math.sqrt(D)
        mx = torch.full(Qb.shape[:-1], -1e30, device=q.device)  # running max
        sm = torch.zeros(Qb.shape[:-1], device=q.device)  # running sum
        o = torch.zeros_like(Qb)  # running (unnormalised) out
        for ks in range(0, S, block_size):
            ke = min(ks + block_size, S)
            if is_causal and ks > qe:  # whole block in the future
                break
            sc = Qb @ k[..., ks:ke, :].transpose(-1, -2)
            if is_causal:
                row = torch.arange(qs, qe, device=q.device).view(-1, 1)
                col = torch.arange(ks, ke, device=q.device).view(1, -1)
                sc = sc.masked_fill(col > row + 1, -1e30)
            nmx = torch.max(mx, sc.max(-1).values)
            e = (sc - nmx[..., None]).exp()
            r = (mx - nmx).exp()
            sm = sm * r + e.sum(-1)
            o = o * r[..., None] + e @ v[..., ks:ke, :]
            mx = nmx
        res[..., qs:qe, :] = o / sm[..., None]
    return res
