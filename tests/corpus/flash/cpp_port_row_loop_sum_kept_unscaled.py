# attnprep: flash
# expect: wrong_output
# diagnosis: flash_sum_not_rescaled + missing_scale
"""A CUDA / C++ port read back into Python: one "thread block" per query row block, explicit index
arithmetic (kv_start, kv_len), row statistics kept as 1-D vectors m_prev / l_prev, the update written
line by line as the kernel does, no helper functions."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[-2]
    softmax_scale = 1.0 / math.sqrt(D)
    out = torch.empty_like(q)
    Br = Bc = block_size
    num_row_blocks = (L + Br - 1) // Br
    num_col_blocks = (S + Bc - 1) // Bc
    for rb in range(num_row_blocks):
        row_start = rb * Br
        row_len = min(Br, L - row_start)
        Qi = q[:, :, row_start:row_start + row_len, :]
        Oi = torch.zeros_like(Qi)
        m_prev = torch.full(Qi.shape[:-1], -math.inf, dtype=q.dtype, device=q.device)
        l_prev = torch.zeros(Qi.shape[:-1], dtype=q.dtype, device=q.device)
        for cb in range(num_col_blocks):
            kv_start = cb * Bc
            if is_causal and kv_start > row_start + row_len - 1:
                break
            kv_len = min(Bc, S - kv_start)
            Kj = k[:, :, kv_start:kv_start + kv_len, :]
            Vj = v[:, :, kv_start:kv_start + kv_len, :]
            Sij = Qi @ Kj.transpose(-1, -2)
            if is_causal:
                r = torch.arange(row_start, row_start + row_len, device=q.device)
                c = torch.arange(kv_start, kv_start + kv_len, device=q.device)
                Sij = Sij.masked_fill(c[None, :] > r[:, None], -math.inf)
            m_cur = torch.maximum(m_prev, Sij.max(dim=-1).values)
            Pij = torch.exp(Sij - m_cur.unsqueeze(-1))
            corr = torch.exp(m_prev - m_cur)
            l_cur = l_prev + Pij.sum(dim=-1)
            Oi = Oi * corr.unsqueeze(-1) + Pij @ Vj
            m_prev, l_prev = m_cur, l_cur
        out[:, :, row_start:row_start + row_len, :] = Oi / l_prev.unsqueeze(-1)
    return out
# bug-line: 34, 42
