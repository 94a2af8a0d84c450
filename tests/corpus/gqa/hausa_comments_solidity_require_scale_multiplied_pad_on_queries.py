# attnprep: gqa
# expect: mask_leak
# diagnosis: scale_inverted + padding_mask_on_queries
"""A Solidity programmer's habits with Hausa comments: require(condition, "message") guards, a
modifier written as a decorator (only3D), uint-like integer names; the scores multiplied by
sqrt(head_dim), and the padding mask broadcast over the query rows instead of the key columns."""
import functools
import math

import torch
import torch.nn as nn


def require(condition, message):
    # Idan sharadi bai cika ba, a dakatar
    if not condition:
        raise ValueError(message)


def only3D(fn):
    # modifier: x dole ne ya zama (B, T, C)
    @functools.wraps(fn)
    def wrapped(self, x, *args, **kwargs):
        require(x.dim() == 3, "x must be (B, T, C)")
        return fn(self, x, *args, **kwargs)
    return wrapped


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        require(d_model % num_heads == 0, "d_model % num_heads != 0")
        require(num_heads % num_kv_heads == 0, "num_heads % num_kv_heads != 0")
        self.uintHeads = num_heads
        self.uintKvHeads = num_kv_heads
        self.uintHeadDim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.uintHeadDim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.uintHeadDim)
        self.o_proj = nn.Linear(d_model, d_model)

    @only3D
    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        # Raba kawunan tambaya da na mabudi
        q = self.q_proj(x).view(B, T, self.uintHeads, self.uintHeadDim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.uintKvHeads, self.uintHeadDim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.uintKvHeads, self.uintHeadDim).transpose(1, 2)
        # Kowace kungiya tana raba kan mabudi daya
        rep = self.uintHeads // self.uintKvHeads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        s = torch.matmul(q, k.transpose(2, 3)) * math.sqrt(self.uintHeadDim)
        if attention_mask is not None:
            # Boye alamomin cikewa
            s = s.masked_fill(~attention_mask[:, None, :, None], float("-inf"))
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        p = torch.softmax(s, dim=-1)
        y = torch.matmul(p, v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(y)
# bug-line: 53, 56
