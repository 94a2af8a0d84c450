# attnprep: flash
# expect: wrong_output
# diagnosis: flash_causal_off_by_one
"""A CUDA kernel's grid carried over to torch: one (batch, head) pair per "block", 2-D tiles of that
head, each tile knowing the global ids of its queries and keys (`q_ids = i + arange(bq)`, the
threadIdx habit); the running max m, sum l and accumulator acc carried over the key tiles, one
division at the end, exp2 with log2(e) folded into the scale as kernels do. The causal test keeps a key only when it is strictly before the query
(`q_ids > k_ids` where `q_ids >= k_ids` belongs): the first query sees no key at all, and every query
loses its own."""

import math

import torch


def _head(qh, kh, vh, is_causal, block_size):
    L, D = qh.shape
    S = kh.shape[0]
    scale_log2 = 1.4426950408889634 / math.sqrt(D)  # exp(x / sqrt(D)) = exp2(x * log2(e) / sqrt(D))
    rows = []
    for i in range(0, L, block_size):
        q_tile = qh[i:i + block_size]  # (bq, D)
        q_ids = i + torch.arange(q_tile.shape[0], device=qh.device)
        m = torch.full((q_tile.shape[0],), float("-inf"), device=qh.device)
        l = torch.zeros(q_tile.shape[0], device=qh.device)
        acc = torch.zeros(q_tile.shape[0], D, device=qh.device)
        for j in range(0, S, block_size):
            k_ids = j + torch.arange(kh[j:j + block_size].shape[0], device=qh.device)
            s = q_tile @ kh[j:j + block_size].T  # (bq, bk)
            if is_causal:
                s = torch.where(q_ids[:, None] > k_ids[None, :], s, float("-inf"))
            m_new = torch.maximum(m, s.max(dim=1).values * scale_log2)
            p = torch.exp2(s * scale_log2 - m_new[:, None])
            corr = torch.exp2(m - m_new)
            l = l * corr + p.sum(dim=1)
            acc = acc * corr[:, None] + p @ vh[j:j + block_size]
            m = m_new
        rows.append(acc / l[:, None])
    return torch.cat(rows)


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H = q.shape[:2]
    out = torch.stack([torch.stack([_head(q[b, h], k[b, h], v[b, h], is_causal, block_size) for h in range(H)])
                       for b in range(B)])
    return out.to(q.dtype)
# bug-line: 31
