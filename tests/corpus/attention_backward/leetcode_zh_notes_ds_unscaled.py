# attnprep: attention_backward
# expect: wrong_output
# diagnosis: backward_scale_missing
"""力扣风格题解：attention 反向传播。思路：先重算前向的 P，再按链式法则求 dV、dP、dS、dQ、dK。
时间复杂度 O(B·H·L·S·D)，空间 O(B·H·L·S)。"""
import math

import torch


class Solution:
    def forward_probs(self, q, k, is_causal):
        # 前向：S = Q K^T / sqrt(d)，因果时屏蔽 j > i
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
        if is_causal:
            L, S = s.shape[-2:]
            fut = torch.ones(L, S, dtype=torch.bool, device=q.device).triu(1)
            s = s.masked_fill(fut, float("-inf"))
        return torch.softmax(s, dim=-1)

    def backward(self, q, k, v, dout, is_causal=False):
        p = self.forward_probs(q, k, is_causal)             # (B, H, L, S)
        dv = torch.matmul(p.transpose(-1, -2), dout)        # dV = P^T dO
        dp = torch.matmul(dout, v.transpose(-1, -2))        # dP = dO V^T
        # softmax 反向：dS = P ⊙ (dP − rowsum(dP ⊙ P))
        ds = p * (dp - (dp * p).sum(dim=-1, keepdim=True))
        dq = torch.matmul(ds, k)                            # dQ = dS K
        dk = torch.matmul(ds.transpose(-1, -2), q)          # dK = dS^T Q
        return dq, dk, dv


def attention_backward(q, k, v, dout, is_causal=False):
    return Solution().backward(q, k, v, dout, is_causal)
# bug-line: 26
