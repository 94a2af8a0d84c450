# attnprep: causal
# expect: mask_leak
# diagnosis: masks_combined_or
"""torch.where with Chinese comments; the causal and padding masks are combined with | (either one
allows) where both must allow (&)."""

import math

import torch


def causal_mask(seq_len, device=None):
    # 下三角：True 表示可以看到
    idx = torch.arange(seq_len, device=device)
    return idx[None, :] <= idx[:, None]


def causal_attention(q, k, v, attention_mask=None):
    # q, k, v: (B, H, T, D)
    T, D = q.shape[-2], q.shape[-1]
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D)  # 注意力分数
    mask = causal_mask(T, q.device)
    if attention_mask is not None:
        # 合并因果掩码和填充掩码
        mask = mask | attention_mask[:, None, None, :].bool()
    neg_inf = torch.full_like(scores, float("-inf"))
    scores = torch.where(mask, scores, neg_inf)
    weights = torch.softmax(scores, dim=-1)  # 每一行和为 1
    return torch.matmul(weights, v)
# bug-line: 25
