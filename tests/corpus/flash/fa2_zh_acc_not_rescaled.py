# attnprep: flash
# expect: wrong_output
# diagnosis: flash_acc_not_rescaled
"""FlashAttention-2 order with Chinese comments; the running sum is rescaled when the max grows but the
output accumulator is not (acc + p @ v instead of alpha * acc + p @ v)."""

import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    out = torch.empty_like(q)
    for qs in range(0, L, block_size):
        qb = q[:, :, qs:qs + block_size] / math.sqrt(D)  # 当前 query 块
        n = qb.shape[2]
        row_max = torch.full((B, H, n, 1), -math.inf, dtype=q.dtype, device=q.device)  # 行最大值
        row_sum = torch.zeros((B, H, n, 1), dtype=q.dtype, device=q.device)  # 行和
        acc = torch.zeros((B, H, n, D), dtype=q.dtype, device=q.device)  # 未归一化输出
        stop = min(S, qs + n) if is_causal else S
        for ks in range(0, stop, block_size):
            kb, vb = k[:, :, ks:ks + block_size], v[:, :, ks:ks + block_size]
            s = qb @ kb.transpose(-1, -2)
            if is_causal:
                r = torch.arange(qs, qs + n, device=q.device).unsqueeze(-1)
                c = torch.arange(ks, ks + kb.shape[2], device=q.device).unsqueeze(0)
                s = s.masked_fill(c > r, -math.inf)
            new_max = torch.maximum(row_max, s.amax(-1, keepdim=True))
            p = torch.exp(s - new_max)
            alpha = torch.exp(row_max - new_max)  # 旧最大值的修正系数
            row_sum = alpha * row_sum + p.sum(-1, keepdim=True)
            acc = acc + p @ vb  # 累加
            row_max = new_max
        out[:, :, qs:qs + n] = acc / row_sum
    return out
# bug-line: 34
