# attnprep: flash
# expect: wrong_output
# diagnosis: flash_sum_not_rescaled
"""An assembly programmer's habits: values kept in "registers" named r0..r7 with a comment of what
each holds, loop labels as comments (`.loop_q:`, `.loop_k:`), one operation per line like an
instruction; the running sum accumulated without the exp(m_old - m_new) correction when the max
grows (the accumulator is corrected)."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    r7 = 1.0 / math.sqrt(D)  # r7: scale
    out = torch.empty_like(q)
    # .loop_q:
    for r0 in range(0, L, block_size):  # r0: first query row of the tile
        r1 = q[:, :, r0:r0 + block_size] * r7  # r1: scaled query tile
        n = r1.shape[2]
        r2 = torch.full((B, H, n, 1), float("-inf"), dtype=q.dtype, device=q.device)  # r2: running max
        r3 = torch.zeros(B, H, n, 1, dtype=q.dtype, device=q.device)  # r3: running sum
        r4 = torch.zeros(B, H, n, D, dtype=q.dtype, device=q.device)  # r4: accumulator
        # .loop_k:
        for r5 in range(0, S, block_size):  # r5: first key column of the tile
            if is_causal and r5 > r0 + n - 1:
                break
            r6 = r1 @ k[:, :, r5:r5 + block_size].transpose(-1, -2)  # r6: score tile
            if is_causal:
                rows = torch.arange(r0, r0 + n, device=q.device)[:, None]
                cols = torch.arange(r5, r5 + r6.shape[-1], device=q.device)[None, :]
                r6 = r6.masked_fill(cols > rows, float("-inf"))
            m_new = torch.maximum(r2, r6.amax(dim=-1, keepdim=True))  # max r2, r6
            alpha = torch.exp(r2 - m_new)  # correction
            p = torch.exp(r6 - m_new)
            r3 = r3 + p.sum(dim=-1, keepdim=True)  # add r3, p
            r4 = r4 * alpha + p @ v[:, :, r5:r5 + block_size]  # fma r4
            r2 = m_new  # mov r2, m_new
        out[:, :, r0:r0 + n] = r4 / r3  # div
    return out
# bug-line: 37
