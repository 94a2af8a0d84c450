# attnprep: flash
# expect: passed
"""Blockwise softmax with torch.softmax on each tile and a logsumexp merge (how ring attention and
FlashDecoding combine partial results): out = Σ exp(lse_j - lse)·softmax_j·v_j."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    outs = []
    for qs in range(0, L, block_size):
        qb = q[:, :, qs:qs + block_size]
        n = qb.shape[2]
        out = torch.zeros_like(qb)
        lse = torch.full((B, H, n, 1), -math.inf, device=q.device, dtype=q.dtype)
        for ks in range(0, S, block_size):
            if is_causal and ks > qs + n - 1:
                break
            kb, vb = k[:, :, ks:ks + block_size], v[:, :, ks:ks + block_size]
            s = qb @ kb.mT / math.sqrt(D)
            if is_causal:
                keep = torch.ones(n, kb.shape[2], dtype=torch.bool, device=q.device).tril(qs - ks)
                s = s.masked_fill(~keep, -math.inf)
            block_lse = torch.logsumexp(s, dim=-1, keepdim=True)  # -inf for a fully masked row
            new_lse = torch.logaddexp(lse, block_lse)
            p = torch.softmax(s, dim=-1).nan_to_num(0.0)
            out = out * torch.exp(lse - new_lse) + (p @ vb) * torch.exp(block_lse - new_lse).nan_to_num(0.0)
            lse = new_lse
        outs.append(out)
    return torch.cat(outs, dim=2)
