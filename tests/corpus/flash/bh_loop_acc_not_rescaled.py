# attnprep: flash
# expect: wrong_output
# diagnosis: flash_acc_not_rescaled
"""Flash attention one (b, h) pair at a time; the accumulator is not rescaled when the max grows."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[-2]
    scale = 1 / math.sqrt(D)
    out = torch.empty_like(q)
    for b in range(B):
        for h in range(H):
            qbh, kbh, vbh = q[b, h], k[b, h], v[b, h]
            for i in range(0, L, block_size):
                q_blk = qbh[i:i + block_size] * scale
                bq = q_blk.shape[0]
                m = torch.full((bq, 1), float("-inf"), dtype=q.dtype, device=q.device)
                l = torch.zeros(bq, 1, dtype=q.dtype, device=q.device)
                acc = torch.zeros(bq, D, dtype=q.dtype, device=q.device)
                stop = min(S, i + bq) if is_causal else S
                for j in range(0, stop, block_size):
                    k_blk = kbh[j:j + block_size]
                    v_blk = vbh[j:j + block_size]
                    s = q_blk @ k_blk.T
                    if is_causal:
                        rows = torch.arange(i, i + bq, device=q.device)[:, None]
                        cols = torch.arange(j, j + k_blk.shape[0], device=q.device)[None, :]
                        s = s.masked_fill(cols > rows, float("-inf"))
                    m_new = torch.maximum(m, s.max(dim=-1, keepdim=True).values)
                    p = torch.exp(s - m_new)
                    alpha = torch.exp(m - m_new)
                    l = alpha * l + p.sum(dim=-1, keepdim=True)
                    acc = acc + p @ v_blk
                    m = m_new
                out[b, h, i:i + bq] = acc / l
    return out
# bug-line: 38
