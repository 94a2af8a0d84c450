# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_init_zero
"""One query row at a time, the running max started at 0: rows whose scores all lie far below 0
underflow to 0 / 0."""
import math
import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    scale = 1.0 / math.sqrt(D)
    o = torch.empty_like(q)
    for b in range(B):
        for h in range(H):
            for i in range(L):
                qi = q[b, h, i]
                m = torch.tensor(0.0, device=q.device)
                l = torch.tensor(0.0, device=q.device)
                acc = torch.zeros(D, device=q.device)
                for start in range(0, S, block_size):
                    end = min(start + block_size, S)
                    s = (k[b, h, start:end] @ qi) * scale
                    if is_causal:
                        pos = torch.arange(start, end, device=q.device)
                        s = s.masked_fill(pos > i, float("-inf"))
                    m_new = torch.maximum(m, s.max())
                    p = torch.exp(s - m_new)
                    alpha = torch.exp(m - m_new)
                    l = l * alpha + p.sum()
                    acc = acc * alpha + p @ v[b, h, start:end]
                    m = m_new
                o[b, h, i] = acc / l
    return o
# bug-line: 19
