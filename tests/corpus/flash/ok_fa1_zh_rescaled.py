# attnprep: flash
# expect: passed
"""FlashAttention-1 的写法（外层循环 key 块，输出每步都归一化，旧输出按 l_old·exp(m_old - m_new) / l_new
重新缩放），中文注释：正确。"""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    scale = 1.0 / math.sqrt(D)
    o = torch.zeros_like(q)
    l = torch.zeros(B, H, L, 1, dtype=q.dtype, device=q.device)
    m = torch.full((B, H, L, 1), float("-inf"), dtype=q.dtype, device=q.device)
    for j in range(0, S, block_size):  # 外层：key/value 块
        kj, vj = k[:, :, j:j + block_size], v[:, :, j:j + block_size]
        for i in range(0, L, block_size):  # 内层：query 块
            if is_causal and j > i + block_size - 1:
                continue  # 整块都在未来
            s = q[:, :, i:i + block_size] @ kj.transpose(-1, -2) * scale
            if is_causal:
                r = torch.arange(i, i + s.shape[-2], device=q.device)[:, None]
                c = torch.arange(j, j + s.shape[-1], device=q.device)[None, :]
                s = s.masked_fill(c > r, float("-inf"))
            m_old, l_old = m[:, :, i:i + block_size], l[:, :, i:i + block_size]
            m_blk = s.amax(-1, keepdim=True)
            m_new = torch.maximum(m_old, m_blk)
            m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)  # 整行被屏蔽时避免 NaN
            p = torch.exp(s - m_safe)
            l_new = torch.exp(m_old - m_safe) * l_old + p.sum(-1, keepdim=True)
            o_old = o[:, :, i:i + block_size]
            o_new = (l_old * torch.exp(m_old - m_safe) * o_old + p @ vj) / torch.where(l_new > 0, l_new, torch.ones_like(l_new))
            o[:, :, i:i + block_size] = o_new
            l[:, :, i:i + block_size] = l_new
            m[:, :, i:i + block_size] = m_new
    return o
