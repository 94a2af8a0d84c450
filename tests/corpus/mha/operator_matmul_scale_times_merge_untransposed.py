# attnprep: mha
# expect: wrong_output
# diagnosis: scale_inverted + merge_heads_no_transpose
"""operator-module style (operator.matmul, operator.mul) with a `where` helper, heads split by
view + permute. Two slips: the scores are multiplied by sqrt(head_dim) instead of divided, and the
heads are merged with reshape straight from (B, H, T, D), without moving the head axis back."""

import math
import operator

import torch
import torch.nn as nn


def where(cond, a, b):
    return torch.where(cond, a, b)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        D = C // self.h
        q, k, v = (p(x).view(B, T, self.h, D).permute(0, 2, 1, 3) for p in (self.q_proj, self.k_proj, self.v_proj))
        s = operator.mul(operator.matmul(q, k.transpose(-1, -2)), math.sqrt(D))
        ok = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            ok = ok & attention_mask[:, None, None, :]
        if is_causal:
            ok = ok & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        p = where(ok, s, torch.full_like(s, float("-inf"))).softmax(-1)
        return self.o_proj(operator.matmul(p, v).reshape(B, T, C))
# bug-line: 32, 39
