# attnprep: cross_attention
# expect: passed
"""Raw nn.Parameter weights used through F.linear (own names), additive float mask built as (1 - m) * -1e4, F.dropout with training=self.training."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_model if d_context is None else d_context
        self.n_head, self.p = num_heads, dropout
        self.wq = nn.Parameter(torch.empty(d_model, d_model))
        self.bq = nn.Parameter(torch.zeros(d_model))
        self.wk = nn.Parameter(torch.empty(d_model, d_context))
        self.bk = nn.Parameter(torch.zeros(d_model))
        self.wv = nn.Parameter(torch.empty(d_model, d_context))
        self.bv = nn.Parameter(torch.zeros(d_model))
        self.wout = nn.Parameter(torch.empty(d_model, d_model))
        self.bout = nn.Parameter(torch.zeros(d_model))
        for w in (self.wq, self.wk, self.wv, self.wout):
            nn.init.xavier_uniform_(w)

    def forward(self, x, context, context_mask=None):
        B, T, E = x.shape
        S = context.shape[1]
        H, D = self.n_head, E // self.n_head
        q = F.linear(x, self.wq, self.bq).view(B, T, H, D).transpose(1, 2)
        k = F.linear(context, self.wk, self.bk).view(B, S, H, D).transpose(1, 2)
        v = F.linear(context, self.wv, self.bv).view(B, S, H, D).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
        if context_mask is not None:
            att = att + (1.0 - context_mask[:, None, None, :].to(att.dtype)) * -1e4
        att = F.softmax(att, dim=-1)
        att = F.dropout(att, p=self.p, training=self.training)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, E)
        return F.linear(y, self.wout, self.bout)
