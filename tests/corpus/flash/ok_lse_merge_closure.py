# attnprep: flash
# expect: passed
"""Correct: each key block gives a normalised partial output and its logsumexp; partials merged with a
closure using torch.logaddexp (the split-K / merge_state form), float32 state."""
import math
import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.size(-2)
    scale = D ** -0.5

    def merge(o_a, lse_a, o_b, lse_b):
        lse = torch.logaddexp(lse_a, lse_b)
        return o_a * torch.exp(lse_a - lse) + o_b * torch.exp(lse_b - lse), lse

    blocks_out = []
    for i in range(0, L, block_size):
        qi = q[:, :, i:i + block_size]
        n = qi.size(-2)
        o = torch.zeros(B, H, n, D, dtype=q.dtype, device=q.device)
        lse = torch.full((B, H, n, 1), -math.inf, dtype=q.dtype, device=q.device)
        for j in range(0, S, block_size):
            if is_causal and j > i + n - 1:
                break
            kj, vj = k[:, :, j:j + block_size], v[:, :, j:j + block_size]
            s = qi @ kj.transpose(-2, -1) * scale
            if is_causal:
                s = s.masked_fill(torch.arange(j, j + kj.size(-2), device=q.device)[None, :]
                                  > torch.arange(i, i + n, device=q.device)[:, None], -math.inf)
            blse = torch.logsumexp(s, dim=-1, keepdim=True)
            bo = torch.exp(s - blse) @ vj
            o, lse = merge(o, lse, bo, blse)
        blocks_out.append(o)
    return torch.cat(blocks_out, dim=-2)
