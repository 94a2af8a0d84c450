# attnprep: attention_backward
# expect: wrong_output
# diagnosis: backward_scale_missing + backward_causal_mask_ignored
"""A CUDA programmer's row tiles: the backward done per tile of 16 query rows (a "thread block"), the
probabilities recomputed by a helper whose causal flag is a default argument, dk and dv accumulated."""
import math

import torch

ROWS_PER_BLOCK = 16


def _probs(q_rows, k, scale, row0, is_causal=False):
    s = (q_rows @ k.transpose(-2, -1)) * scale
    if is_causal:
        r = row0 + torch.arange(q_rows.shape[-2], device=q_rows.device)[:, None]
        c = torch.arange(k.shape[-2], device=k.device)[None, :]
        s = s.masked_fill(c > r, float("-inf"))
    return s.softmax(dim=-1)


def attention_backward(q, k, v, dout, is_causal=False):
    L, D = q.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(D)
    dq = torch.zeros_like(q)
    dk = torch.zeros_like(k)
    dv = torch.zeros_like(v)
    for block_idx in range((L + ROWS_PER_BLOCK - 1) // ROWS_PER_BLOCK):
        r0, r1 = block_idx * ROWS_PER_BLOCK, min((block_idx + 1) * ROWS_PER_BLOCK, L)
        p = _probs(q[..., r0:r1, :], k, scale, r0)
        do = dout[..., r0:r1, :]
        dv = dv + p.transpose(-2, -1) @ do
        dp = do @ v.transpose(-2, -1)
        ds = p * (dp - (dp * p).sum(dim=-1, keepdim=True))
        dq[..., r0:r1, :] = ds @ k
        dk = dk + ds.transpose(-2, -1) @ q[..., r0:r1, :]
    return dq, dk, dv
# bug-line: 30, 34
