# attnprep: flash
# expect: passed
"""Model-file habit: inputs permuted to (B, L, H, D) (flash_attn's layout) before tiling, einsum on
that layout, statistics (B, bq, H), the output permuted back; a torch.where causal mask on tiles."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    q_, k_, v_ = q.permute(0, 2, 1, 3), k.permute(0, 2, 1, 3), v.permute(0, 2, 1, 3)
    B, L, H, D = q_.shape
    S = k_.shape[1]
    softmax_scale = 1 / math.sqrt(D)
    o_ = torch.empty_like(q_)
    neg = torch.tensor(float("-inf"), dtype=q.dtype, device=q.device)
    for i in range(0, L, block_size):
        qb = q_[:, i:i + block_size]
        n = qb.shape[1]
        mx = torch.full((B, n, H), float("-inf"), dtype=q.dtype, device=q.device)
        den = torch.zeros(B, n, H, dtype=q.dtype, device=q.device)
        num = torch.zeros(B, n, H, D, dtype=q.dtype, device=q.device)
        for j in range(0, S, block_size):
            if is_causal and j >= i + n:
                break
            kb, vb = k_[:, j:j + block_size], v_[:, j:j + block_size]
            s = torch.einsum("bihd,bjhd->bihj", qb, kb) * softmax_scale
            if is_causal:
                ok = torch.arange(j, j + kb.shape[1], device=q.device)[None, :] <= torch.arange(i, i + n, device=q.device)[:, None]
                s = torch.where(ok[None, :, None, :], s, neg)
            new = torch.maximum(mx, s.amax(-1))
            w = torch.exp(s - new[..., None])
            f = torch.exp(mx - new)
            den = den * f + w.sum(-1)
            num = num * f[..., None] + torch.einsum("bihj,bjhd->bihd", w, vb)
            mx = new
        o_[:, i:i + n] = num / den[..., None]
    return o_.permute(0, 2, 1, 3)
