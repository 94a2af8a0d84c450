# attnprep: sdpa
# expect: mask_leak
# diagnosis: softmax_unstable + float_mask_multiplied
"""牛客 / 力扣 风格：手写 softmax 与缩放点积注意力。
要点：1) softmax 按行归一化；2) bool mask True 表示可以看；3) float mask 作为偏置；4) is_causal 左上对齐。"""
import math

import torch


def softmax(x, dim=-1):
    # e^x / sum(e^x)，-inf 处 e^x = 0
    e = torch.exp(x)
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.shape[-2], key.shape[-2]
    scale = scale if scale is not None else 1.0 / math.sqrt(query.shape[-1])
    scores = torch.matmul(query, key.transpose(-2, -1)) * scale      # (..., L, S)
    if is_causal:
        # 左上对齐的下三角
        allow = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
        scores = scores.masked_fill(~allow, float("-inf"))
    elif attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores * attn_mask      # 浮点 mask
    return torch.matmul(softmax(scores, dim=-1), value)
# bug-line: 13, 29
