# attnprep: sdpa
# expect: wrong_output
# diagnosis: softmax_unstable + scale_argument_ignored
"""力扣风格模板：类 Solution 里的静态方法，中文 docstring。两个对象各有一处错误：softmax 直接
exp 没有减最大值（大输入溢出成 inf / nan）；attention 总是用 1/sqrt(E)，忽略了传入的 scale。"""

import math

import torch


class Solution:
    @staticmethod
    def softmax(x, dim=-1):
        """手写 softmax。"""
        e = torch.exp(x)
        return e / e.sum(dim=dim, keepdim=True)

    @staticmethod
    def sdpa(query, key, value, attn_mask=None, is_causal=False, scale=None):
        """缩放点积注意力，和 F.scaled_dot_product_attention 一致（无 dropout）。"""
        L, S = query.shape[-2], key.shape[-2]
        scale_factor = 1 / math.sqrt(query.shape[-1])
        attn_bias = torch.zeros(L, S, dtype=query.dtype, device=query.device)
        if is_causal:
            keep = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
            attn_bias = attn_bias.masked_fill(~keep, float("-inf"))
        if attn_mask is not None:
            if attn_mask.dtype == torch.bool:
                attn_bias = attn_bias.masked_fill(~attn_mask, float("-inf"))
            else:
                attn_bias = attn_bias + attn_mask
        w = query @ key.transpose(-2, -1) * scale_factor + attn_bias
        return Solution.softmax(w, dim=-1) @ value


softmax = Solution.softmax
scaled_dot_product_attention = Solution.sdpa
# bug-line: 16, 23
