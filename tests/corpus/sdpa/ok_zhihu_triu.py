# attnprep: sdpa
# expect: passed
"""正确：知乎答案风格，中文注释；因果掩码用 triu(diagonal=1) 标出未来位置，先缩放 q 再乘 kᵀ。"""

import math

import torch


def softmax(x, dim=-1):
    # 减去最大值，防止 exp 溢出（数值稳定）
    x_max = torch.max(x, dim=dim, keepdim=True).values
    x_exp = torch.exp(x - x_max)
    return x_exp / torch.sum(x_exp, dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    # 缩放因子：默认 1/sqrt(d_k)
    d_k = query.size(-1)
    if scale is None:
        scale = 1 / math.sqrt(d_k)
    q = query * scale
    scores = torch.matmul(q, key.transpose(-2, -1))  # (..., L, S)
    if is_causal:
        L, S = scores.size(-2), scores.size(-1)
        future = torch.triu(torch.ones(L, S, device=scores.device), diagonal=1).bool()  # 未来位置
        scores = scores.masked_fill(future, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(attn_mask == False, float("-inf"))  # noqa: E712
        else:
            scores = scores + attn_mask  # 加性掩码
    p_attn = softmax(scores, dim=-1)
    return torch.matmul(p_attn, value)
