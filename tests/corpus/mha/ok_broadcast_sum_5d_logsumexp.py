# attnprep: mha
# expect: passed
"""Correct, written without a matmul for the scores: q (B, T, H, 1, D) * k (B, 1, H, S, D)... as a
broadcast product summed over D (the numpy habit, None indexing instead of unsqueeze), a softmax
written as exp(s - logsumexp(s)), the mask as uint8, the output by a 5-d broadcast too."""

import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.dk = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)
        self.p = dropout

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.wq(x).reshape(B, T, self.h, self.dk)  # (B, T, H, D)
        k = self.wk(x).reshape(B, T, self.h, self.dk)
        v = self.wv(x).reshape(B, T, self.h, self.dk)
        # scores[b, h, i, j] = sum_d q[b, i, h, d] * k[b, j, h, d]
        s = (q.permute(0, 2, 1, 3)[:, :, :, None, :] * k.permute(0, 2, 1, 3)[:, :, None, :, :]).sum(-1)
        s = s / math.sqrt(self.dk)
        keep = torch.ones(B, 1, T, T, dtype=torch.uint8, device=x.device)
        if is_causal:
            keep = keep * torch.tril(torch.ones(T, T, dtype=torch.uint8, device=x.device))
        if attention_mask is not None:
            keep = keep * attention_mask.to(torch.uint8)[:, None, None, :]
        s = s.masked_fill(keep == 0, float("-inf"))
        p = torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True))
        p = nn.functional.dropout(p, self.p, self.training)
        o = (p[..., None] * v.permute(0, 2, 1, 3)[:, :, None, :, :]).sum(-2)  # (B, H, T, D)
        return self.wo(o.permute(0, 2, 1, 3).reshape(B, T, C))
