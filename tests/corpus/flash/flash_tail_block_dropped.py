# attnprep: flash
# expect: wrong_output
"""bmm + lse; the key loop bound S - block_size + 1 drops the last partial block."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    Q = q.reshape(B * H, L, D)
    K = k.reshape(B * H, S, D)
    V = v.reshape(B * H, S, D)
    O = torch.zeros_like(Q)
    scale = D ** -0.5
    for i0 in range(0, L, block_size):
        qi = Q[:, i0:i0 + block_size]
        bq = qi.shape[1]
        lse = torch.full((B * H, bq, 1), -math.inf, dtype=q.dtype, device=q.device)
        oi = torch.zeros(B * H, bq, D, dtype=q.dtype, device=q.device)
        for j0 in range(0, S - block_size + 1, block_size):
            if is_causal and j0 > i0 + bq - 1:
                break
            s = torch.bmm(qi, K[:, j0:j0 + block_size].transpose(1, 2)) * scale
            if is_causal:
                rows = torch.arange(i0, i0 + bq, device=q.device).view(-1, 1)
                cols = torch.arange(j0, j0 + s.shape[-1], device=q.device).view(1, -1)
                s = s.masked_fill(cols > rows, -math.inf)
            m = torch.maximum(s.amax(dim=-1, keepdim=True), lse)
            blk = torch.exp(s - m)
            lse_new = m + torch.log(torch.exp(lse - m) + blk.sum(-1, keepdim=True))
            oi = oi * torch.exp(lse - lse_new) + torch.bmm(blk, V[:, j0:j0 + block_size]) * torch.exp(m - lse_new)
            lse = lse_new
        O[:, i0:i0 + bq] = oi
    return O.view(B, H, L, D)
# bug-line: 22
