# attnprep: mha
# expect: passed
"""Correct, raw nn.Parameter weights used with F.linear (nn.Linear layout (out, in)), own names, float32 softmax cast back."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.nh = num_heads
        self.hd = d_model // num_heads
        self.Wq = nn.Parameter(torch.empty(d_model, d_model))
        self.bq = nn.Parameter(torch.zeros(d_model))
        self.Wk = nn.Parameter(torch.empty(d_model, d_model))
        self.bk = nn.Parameter(torch.zeros(d_model))
        self.Wv = nn.Parameter(torch.empty(d_model, d_model))
        self.bv = nn.Parameter(torch.zeros(d_model))
        self.Wo = nn.Parameter(torch.empty(d_model, d_model))
        self.bo = nn.Parameter(torch.zeros(d_model))
        for w in (self.Wq, self.Wk, self.Wv, self.Wo):
            nn.init.xavier_uniform_(w)
        self.p = dropout

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, is_causal: bool = False) -> torch.Tensor:
        B, T, C = x.shape
        q = F.linear(x, self.Wq, self.bq).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = F.linear(x, self.Wk, self.bk).view(B, T, self.nh, self.hd).transpose(1, 2)
        v = F.linear(x, self.Wv, self.bv).view(B, T, self.nh, self.hd).transpose(1, 2)

        s = q @ k.transpose(-1, -2) / math.sqrt(self.hd)
        neg = torch.finfo(s.dtype).min
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), neg)
        if attention_mask is not None:
            s = s.masked_fill(attention_mask[:, None, None, :] == 0, neg)
        a = s.float().softmax(dim=-1).to(s.dtype)
        a = F.dropout(a, self.p, self.training)
        o = (a @ v).transpose(1, 2).reshape(B, T, C)
        return F.linear(o, self.Wo, self.bo)
