# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_init_zero
"""In-place accumulators (mul_, add_, copy_) and one preallocated output; the running max starts at
zeros like the sum does. Exact unless a row's scores are all far below zero."""
import math
import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    o = q.new_empty(B, H, L, v.shape[-1])
    for r0 in range(0, L, block_size):
        r1 = min(r0 + block_size, L)
        qb = q[:, :, r0:r1] / math.sqrt(D)
        run_max = q.new_zeros(B, H, r1 - r0, 1)
        run_sum = q.new_zeros(B, H, r1 - r0, 1)
        acc = q.new_zeros(B, H, r1 - r0, v.shape[-1])
        for c0 in range(0, min(r1, S) if is_causal else S, block_size):
            c1 = min(c0 + block_size, S)
            sc = qb @ k[:, :, c0:c1].transpose(-2, -1)
            if is_causal:
                rows = torch.arange(r0, r1, device=q.device)[:, None]
                cols = torch.arange(c0, c1, device=q.device)[None, :]
                sc.masked_fill_(cols > rows, float("-inf"))
            new_max = torch.maximum(run_max, sc.amax(-1, keepdim=True))
            corr = torch.exp(run_max - new_max)
            pexp = torch.exp(sc - new_max)
            run_sum.mul_(corr).add_(pexp.sum(-1, keepdim=True))
            acc.mul_(corr).add_(pexp @ v[:, :, c0:c1])
            run_max.copy_(new_max)
        o[:, :, r0:r1] = acc / run_sum
    return o
# bug-line: 17
