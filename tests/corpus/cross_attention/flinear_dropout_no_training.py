# attnprep: cross_attention
# expect: wrong_output
# diagnosis: dropout_in_eval
"""F.linear style with raw parameters; F.dropout(att, self.p) without training=self.training."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_model if d_context is None else d_context
        self.n_head, self.p = num_heads, dropout
        self.wq = nn.Parameter(torch.randn(d_model, d_model) * 0.02)
        self.wk = nn.Parameter(torch.randn(d_model, d_context) * 0.02)
        self.wv = nn.Parameter(torch.randn(d_model, d_context) * 0.02)
        self.wout = nn.Parameter(torch.randn(d_model, d_model) * 0.02)
        self.bq, self.bk = nn.Parameter(torch.zeros(d_model)), nn.Parameter(torch.zeros(d_model))
        self.bv, self.bout = nn.Parameter(torch.zeros(d_model)), nn.Parameter(torch.zeros(d_model))

    def forward(self, x, context, context_mask=None):
        B, T, E = x.shape
        S = context.shape[1]
        H, D = self.n_head, E // self.n_head
        q = F.linear(x, self.wq, self.bq).view(B, T, H, D).transpose(1, 2)
        k = F.linear(context, self.wk, self.bk).view(B, S, H, D).transpose(1, 2)
        v = F.linear(context, self.wv, self.bv).view(B, S, H, D).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D)
        if context_mask is not None:
            att = att.masked_fill(~context_mask[:, None, None, :], float("-inf"))
        att = F.dropout(F.softmax(att, dim=-1), self.p)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, E)
        return F.linear(y, self.wout, self.bout)
