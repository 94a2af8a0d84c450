# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_not_carried
"""nanoGPT-like names, Chinese comments: each key block's max is used on its own (m = 当前块的最大值)
instead of max(m_old, block max), so the rescale factor compares two block maxima."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, nh, T, hs = q.shape
    S = k.size(2)
    att_scale = 1.0 / math.sqrt(hs)
    y = torch.empty_like(q)
    for qs in range(0, T, block_size):
        qe = min(qs + block_size, T)
        qb = q[:, :, qs:qe]  # 查询块
        m = torch.full((B, nh, qe - qs, 1), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros((B, nh, qe - qs, 1), dtype=q.dtype, device=q.device)
        acc = torch.zeros((B, nh, qe - qs, hs), dtype=q.dtype, device=q.device)
        for ks in range(0, S, block_size):
            ke = min(ks + block_size, S)
            if is_causal and ks > qe - 1:
                break  # 之后的块全部在未来
            att = (qb @ k[:, :, ks:ke].transpose(-2, -1)) * att_scale
            if is_causal:
                rows = torch.arange(qs, qe, device=q.device).view(-1, 1)
                cols = torch.arange(ks, ke, device=q.device).view(1, -1)
                att = att.masked_fill(cols > rows, float("-inf"))
            m_blk = att.amax(dim=-1, keepdim=True)  # 当前块的最大值
            p = torch.exp(att - m_blk)
            corr = torch.exp(m - m_blk)  # 旧状态的缩放
            l = corr * l + p.sum(dim=-1, keepdim=True)
            acc = corr * acc + p @ v[:, :, ks:ke]
            m = m_blk
        y[:, :, qs:qe] = acc / l
    return y
# bug-line: 32
