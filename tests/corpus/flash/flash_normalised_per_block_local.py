# attnprep: flash
# expect: wrong_output
# diagnosis: flash_normalised_per_block
"""torch.split style; each block's p @ v divided by its own sum as it is added."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    d = q.size(-1)
    outs = []
    i0 = 0
    for q_blk in q.split(block_size, dim=2):
        bq = q_blk.size(2)
        m = torch.full(q_blk.shape[:-1] + (1,), torch.finfo(q.dtype).min, dtype=q.dtype, device=q.device)
        l = torch.zeros_like(m)
        acc = torch.zeros_like(q_blk)
        j0 = 0
        for k_blk, v_blk in zip(k.split(block_size, dim=2), v.split(block_size, dim=2)):
            bk = k_blk.size(2)
            if is_causal and j0 >= i0 + bq:
                break
            s = q_blk @ k_blk.transpose(-2, -1) / math.sqrt(d)
            if is_causal:
                keep = torch.ones(bq, bk, dtype=torch.bool, device=q.device).tril(diagonal=i0 - j0)
                s = s.masked_fill(~keep, float("-inf"))
            m_new = torch.max(m, s.max(dim=-1, keepdim=True)[0])
            p = (s - m_new).exp()
            corr = (m - m_new).exp()
            l = corr * l + p.sum(dim=-1, keepdim=True)
            acc = corr * acc + (p / p.sum(dim=-1, keepdim=True)) @ v_blk
            m = m_new
            j0 += bk
        outs.append(acc / (l / l))
        i0 += bq
    return torch.cat(outs, dim=2)
# bug-line: 32, 35
