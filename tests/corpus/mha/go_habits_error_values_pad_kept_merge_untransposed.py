# attnprep: mha
# expect: mask_leak
# diagnosis: padding_mask_inverted + merge_heads_no_transpose
"""Written by a Go programmer: every helper returns (value, err) and the caller checks
`if err is not None`, early returns, explicit named results, no exceptions in the happy path,
shapes checked by hand."""
import math

import torch
import torch.nn as nn


class ShapeError(Exception):
    pass


def splitHeads(t, numHeads):
    b, n, c = t.shape
    if c % numHeads != 0:
        return None, ShapeError(f"width {c} not divisible by {numHeads}")
    res = t.view(b, n, numHeads, c // numHeads).transpose(1, 2)
    return res, None


def mergeHeads(t):
    b, h, n, d = t.shape
    res = t.reshape(b, n, h * d)
    return res, None


def keyMask(attentionMask):
    if attentionMask is None:
        return None, None
    if attentionMask.dtype != torch.bool:
        return None, ShapeError("attention_mask must be bool")
    blocked = attentionMask[:, None, None, :]
    return blocked, None


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.numHeads = num_heads
        self.headDim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        q, err = splitHeads(self.q_proj(x), self.numHeads)
        if err is not None:
            raise err
        k, err = splitHeads(self.k_proj(x), self.numHeads)
        if err is not None:
            raise err
        v, err = splitHeads(self.v_proj(x), self.numHeads)
        if err is not None:
            raise err
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.headDim)
        blocked, err = keyMask(attention_mask)
        if err is not None:
            raise err
        if blocked is not None:
            scores = scores.masked_fill(blocked, -1e9)
        if is_causal:
            n = x.shape[1]
            future = torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), diagonal=1)
            scores = scores.masked_fill(future, -1e9)
        probs = self.drop(torch.softmax(scores, dim=-1))
        ctx, err = mergeHeads(torch.matmul(probs, v))
        if err is not None:
            raise err
        return self.o_proj(ctx)
# bug-line: 27, 36
