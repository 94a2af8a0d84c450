# attnprep: flash
# expect: passed
"""Correct: torch.einsum for every product ("bhqd,bhkd->bhqk", "bhqk,bhkd->bhqd"), the state kept as
(running max, log of the running sum) and the accumulator kept normalised, FlashAttention-1's
update: o = (exp(lse_old - lse_new) * o + exp(s - lse_new) @ v); no final division needed."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[-2]
    sm_scale = 1.0 / math.sqrt(D)
    out = []
    for qs in range(0, L, block_size):
        qb = q[:, :, qs:qs + block_size]
        n = qb.shape[2]
        lse = torch.full((B, H, n, 1), float("-inf"), dtype=q.dtype, device=q.device)
        o = torch.zeros((B, H, n, D), dtype=q.dtype, device=q.device)
        last = qs + n - 1
        for ks in range(0, S, block_size):
            if is_causal and ks > last:
                break
            kb, vb = k[:, :, ks:ks + block_size], v[:, :, ks:ks + block_size]
            s = torch.einsum("bhqd,bhkd->bhqk", qb, kb) * sm_scale
            if is_causal:
                qi = torch.arange(qs, qs + n, device=q.device)
                kj = torch.arange(ks, ks + kb.shape[2], device=q.device)
                s = torch.where(kj[None, :] <= qi[:, None], s, torch.full_like(s, float("-inf")))
            blk = torch.logsumexp(s, dim=-1, keepdim=True)
            lse_new = torch.logaddexp(lse, blk)
            o = torch.exp(lse - lse_new) * o + torch.einsum("bhqk,bhkd->bhqd", torch.exp(s - lse_new), vb)
            lse = lse_new
        out.append(o)
    return torch.cat(out, dim=2)
