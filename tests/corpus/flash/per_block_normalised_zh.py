# attnprep: flash
# expect: wrong_output
# diagnosis: flash_normalised_per_block
"""每个 key 块内部先归一化再累加 (normalising per block): acc = alpha·acc + softmax_block @ v, then
the final division by the carried sum. Each block is divided by its sum of exp(s - m_new) against
the running max (clamped at 1e-30): a block whose exponentials all underflow (the large-scores case)
adds 0, where the plain block softmax gives 0 / 0. Named by that sub-variant (local_clamped)."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.size(2)
    outs = []
    for i in range(0, L, block_size):
        qi = q[:, :, i:i + block_size] / math.sqrt(D)
        n = qi.size(2)
        m = torch.full((B, H, n, 1), float("-inf"), device=q.device, dtype=q.dtype)
        l = torch.zeros((B, H, n, 1), device=q.device, dtype=q.dtype)
        o = torch.zeros((B, H, n, D), device=q.device, dtype=q.dtype)
        for j in range(0, S, block_size):
            s = qi @ k[:, :, j:j + block_size].transpose(-1, -2)  # 分数块
            if is_causal:
                r = torch.arange(i, i + n, device=q.device)[:, None]
                c = torch.arange(j, j + s.size(-1), device=q.device)[None, :]
                s = s.masked_fill(c > r, float("-inf"))
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))
            p = torch.exp(s - m_new)
            blk_sum = p.sum(-1, keepdim=True)
            alpha = torch.exp(m - m_new)
            p = p / blk_sum.clamp_min(1e-30)  # 块内归一化
            o = alpha * o + p @ v[:, :, j:j + block_size]
            l = alpha * l + blk_sum
            m = m_new
        outs.append(o / l)
    return torch.cat(outs, 2)
# bug-line: 34
