# attnprep: sdpa
# expect: mask_leak
# diagnosis: causal_masks_diagonal
"""博客风格：未来位置用 triu(ones) 标出，但忘了 diagonal=1，连对角线也被遮住了（第 0 行全被 -1e9 填满，变成均匀分布，泄漏到未来）。"""

import math

import torch


def softmax(x, dim=-1):
    x_max, _ = x.max(dim=dim, keepdim=True)
    e = torch.exp(x - x_max)
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) * (scale if scale is not None else d_k ** -0.5)
    if is_causal:
        L, S = scores.shape[-2:]
        mask = torch.triu(torch.ones(L, S, device=scores.device)).bool()  # 未来位置
        scores = scores.masked_fill(mask, -1e9)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, -1e9)
        else:
            scores = scores + attn_mask
    return torch.matmul(softmax(scores, dim=-1), value)
