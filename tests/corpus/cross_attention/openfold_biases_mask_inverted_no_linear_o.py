# attnprep: cross_attention
# expect: mask_leak
# diagnosis: padding_mask_inverted + output_proj_skipped
"""OpenFold's Attention(c_q, c_k, c_v, c_hidden, no_heads) used as cross-attention (q_x from x, kv_x
from the context): _prep_qkv, permute_final_dims, a list of `biases` with `inf * (mask - 1)`,
_wrap_up for the output. Two slips: the bias is `inf * -mask` instead of `inf * (mask - 1)` (the
real context tokens pushed down, the padding left at 0), and _wrap_up
returns the merged heads without linear_o (which exists and is never called)."""

import math
from typing import List, Optional

import torch
import torch.nn as nn


def permute_final_dims(tensor: torch.Tensor, inds: List[int]):
    zero_index = -1 * len(inds)
    first_inds = list(range(len(tensor.shape[:zero_index])))
    return tensor.permute(first_inds + [zero_index + i for i in inds])


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        c_q, c_k = d_model, d_context or d_model
        self.c_hidden = d_model // num_heads
        self.no_heads = num_heads
        self.linear_q = nn.Linear(c_q, self.c_hidden * self.no_heads)
        self.linear_k = nn.Linear(c_k, self.c_hidden * self.no_heads)
        self.linear_v = nn.Linear(c_k, self.c_hidden * self.no_heads)
        self.linear_o = nn.Linear(self.c_hidden * self.no_heads, c_q)
        self.inf = 1e9

    def _prep_qkv(self, q_x, kv_x):
        q = self.linear_q(q_x).view(q_x.shape[:-1] + (self.no_heads, -1)).transpose(-2, -3)
        k = self.linear_k(kv_x).view(kv_x.shape[:-1] + (self.no_heads, -1)).transpose(-2, -3)
        v = self.linear_v(kv_x).view(kv_x.shape[:-1] + (self.no_heads, -1)).transpose(-2, -3)
        q = q / math.sqrt(self.c_hidden)
        return q, k, v

    def _wrap_up(self, o: torch.Tensor) -> torch.Tensor:
        o = o.transpose(-2, -3)  # [*, Q, H, C_hidden]
        o = o.reshape(o.shape[:-2] + (-1,))
        return o

    def forward(self, x, context, context_mask: Optional[torch.Tensor] = None):
        biases = []
        if context_mask is not None:
            mask = context_mask.to(x.dtype)[:, None, None, :]
            biases.append(self.inf * -mask)
        q, k, v = self._prep_qkv(x, context)
        a = torch.matmul(q, permute_final_dims(k, (1, 0)))
        for b in biases:
            a = a + b
        a = torch.softmax(a, dim=-1)
        o = torch.matmul(a, v)
        return self._wrap_up(o)
# bug-line: 45, 51
