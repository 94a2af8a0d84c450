# attnprep: flash
# expect: wrong_output
# diagnosis: flash_sum_not_rescaled + missing_scale
"""Interview notes, terse: q, k, v only, one-letter state (m, l, o), no helper, key tiles only (the
queries handled all at once, as the notes' first draft). Two slips: the scores are never scaled by
1/sqrt(D), and the running sum l gets the new tile's mass without being rescaled by exp(m - m')."""

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    o = torch.zeros_like(q)
    m = torch.full((B, H, L, 1), float("-inf"), dtype=q.dtype, device=q.device)
    l = torch.zeros((B, H, L, 1), dtype=q.dtype, device=q.device)
    i = torch.arange(L, device=q.device)[:, None]
    for j in range(0, S, block_size):
        if is_causal and j >= L:
            break
        s = q @ k[:, :, j:j + block_size].transpose(-1, -2)
        if is_causal:
            c = torch.arange(j, j + s.shape[-1], device=q.device)[None, :]
            s = s.masked_fill(c > i, float("-inf"))
        n = torch.maximum(m, s.amax(-1, keepdim=True))
        a = torch.exp(m - n)
        p = torch.exp(s - n)
        l = l + p.sum(-1, keepdim=True)
        o = a * o + p @ v[:, :, j:j + block_size]
        m = n
    return o / l
# bug-line: 21, 28
