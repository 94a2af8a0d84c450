# attnprep: flash
# expect: wrong_output
# diagnosis: flash_sum_not_rescaled + missing_scale
"""itertools style: the (query block, key block) pairs come from itertools.product over two lists of
slices, the running statistics live in dicts keyed by the query block's start, and the outputs are
joined with torch.cat at the end. Two slips: the scores are never scaled by 1/sqrt(D), and when the
max grows the running sum keeps its old value while the accumulator is rescaled."""

import itertools

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    q_starts = list(range(0, L, block_size))
    k_starts = list(range(0, S, block_size))
    m = {i: q.new_full((B, H, min(block_size, L - i), 1), float("-inf")) for i in q_starts}
    l = {i: q.new_zeros(B, H, min(block_size, L - i), 1) for i in q_starts}
    acc = {i: q.new_zeros(B, H, min(block_size, L - i), D) for i in q_starts}
    for i, j in itertools.product(q_starts, k_starts):
        if is_causal and j > i + block_size - 1:
            continue
        qb = q[:, :, i:i + block_size]
        kb, vb = k[:, :, j:j + block_size], v[:, :, j:j + block_size]
        s = qb @ kb.transpose(2, 3)
        if is_causal:
            qi = torch.arange(i, i + qb.shape[2], device=q.device)[:, None]
            kj = torch.arange(j, j + kb.shape[2], device=q.device)[None, :]
            s = s.masked_fill(kj > qi, float("-inf"))
        m_new = torch.maximum(m[i], s.amax(-1, keepdim=True))
        p = torch.exp(s - m_new)
        scale_old = torch.exp(m[i] - m_new)
        l[i] = l[i] + p.sum(-1, keepdim=True)
        acc[i] = scale_old * acc[i] + p @ vb
        m[i] = m_new
    return torch.cat([acc[i] / l[i] for i in q_starts], dim=2)
# bug-line: 27, 35
