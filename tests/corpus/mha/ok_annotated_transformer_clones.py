# attnprep: mha
# expect: passed
"""Correct: The Annotated Transformer (Harvard NLP) habits: clones() of one Linear into a ModuleList
of four, a module-level attention(query, key, value, mask, dropout) returning (out, p_attn), the
mask unsqueezed once for the heads, masked_fill(mask == 0, -1e9), a zip over the linears for the
three projections, self.attn kept for inspection, and the last linear as the output projection."""

import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def clones(module, N):
    "Produce N identical layers."
    return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])


def subsequent_mask(size, device):
    "Mask out subsequent positions."
    attn_shape = (1, size, size)
    return torch.triu(torch.ones(attn_shape, device=device), diagonal=1).type(torch.uint8) == 0


def attention(query, key, value, mask=None, dropout=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = F.softmax(scores, dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        assert d_model % num_heads == 0
        self.d_k = d_model // num_heads
        self.h = num_heads
        self.linears = clones(nn.Linear(d_model, d_model), 4)
        self.attn = None
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        nbatches, T = x.size(0), x.size(1)
        mask = torch.ones(nbatches, 1, T, dtype=torch.bool, device=x.device)  # (B, 1, T)
        if attention_mask is not None:
            mask = mask & attention_mask.unsqueeze(1)
        if is_causal:
            mask = mask & subsequent_mask(T, x.device)  # (B, T, T)
        mask = mask.unsqueeze(1)  # same mask applied to all h heads
        query, key, value = [
            lin(t).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin, t in zip(self.linears, (x, x, x))
        ]
        x, self.attn = attention(query, key, value, mask=mask, dropout=self.dropout)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        del query
        del key
        del value
        return self.linears[-1](x)
