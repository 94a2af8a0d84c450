# attnprep: flash
# expect: wrong_output
# diagnosis: flash_causal_off_by_one
"""中文笔记风格的 flash：因果掩码写成 k_idx >= q_idx 就屏蔽，把对角线（自己）也挡掉了（off by one）。"""

import math

import torch


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool = False, block_size: int = 64) -> torch.Tensor:
    B, H, L, D = q.shape
    S = k.shape[2]
    scale = D ** -0.5
    o = torch.zeros_like(q)
    for qs in range(0, L, block_size):
        qb = q[:, :, qs:qs + block_size]
        nq = qb.shape[2]
        row_max = q.new_full((B, H, nq), -math.inf)
        row_sum = q.new_zeros((B, H, nq))
        acc = q.new_zeros((B, H, nq, D))
        q_idx = torch.arange(qs, qs + nq, device=q.device)
        for ks in range(0, S, block_size):
            kb, vb = k[:, :, ks:ks + block_size], v[:, :, ks:ks + block_size]
            s = torch.einsum("bhqd,bhkd->bhqk", qb, kb) * scale
            if is_causal:
                k_idx = torch.arange(ks, ks + kb.shape[2], device=q.device)
                s = s.masked_fill(k_idx[None, :] >= q_idx[:, None], -math.inf)
            new_max = torch.maximum(row_max, s.amax(-1))
            new_max_safe = torch.where(torch.isinf(new_max), torch.zeros_like(new_max), new_max)
            p = torch.exp(s - new_max_safe[..., None])
            c = torch.exp(row_max - new_max_safe)
            row_sum = row_sum * c + p.sum(-1)
            acc = acc * c[..., None] + torch.einsum("bhqk,bhkd->bhqd", p, vb)
            row_max = new_max
        o[:, :, qs:qs + nq] = acc / row_sum[..., None]
    return o
# bug-line: 28
