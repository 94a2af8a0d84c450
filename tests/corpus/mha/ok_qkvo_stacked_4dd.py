# attnprep: mha
# expect: passed
"""All four projections in one (4, d, d) parameter with a (4, d) bias: [q, k, v, o]."""
import math
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.W = nn.Parameter(torch.empty(4, d_model, d_model))
        self.b = nn.Parameter(torch.zeros(4, d_model))
        for i in range(4):
            nn.init.xavier_uniform_(self.W.data[i])
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H = self.h
        D = C // H
        q = (x @ self.W[0].T + self.b[0]).view(B, T, H, D).permute(0, 2, 1, 3)
        k = (x @ self.W[1].T + self.b[1]).view(B, T, H, D).permute(0, 2, 1, 3)
        v = (x @ self.W[2].T + self.b[2]).view(B, T, H, D).permute(0, 2, 1, 3)
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) * D ** -0.5
        keep = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            keep = keep & attention_mask.bool()[:, None, None, :]
        if is_causal:
            keep = keep & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        s = torch.where(keep, s, torch.finfo(s.dtype).min)
        a = self.drop(torch.softmax(s, dim=-1))
        o = torch.einsum("bhqk,bhkd->bqhd", a, v).reshape(B, T, C)
        return o @ self.W[3].T + self.b[3]
