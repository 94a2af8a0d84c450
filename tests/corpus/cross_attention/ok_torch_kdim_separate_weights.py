# attnprep: cross_attention
# expect: passed
"""nn.MultiheadAttention's kdim/vdim layout by hand: q_proj_weight (d, d), k_proj_weight and
v_proj_weight (d, d_context), one in_proj_bias (3d), out_proj."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        kdim = d_context or d_model
        self.num_heads = num_heads
        self.q_proj_weight = nn.Parameter(torch.empty(d_model, d_model))
        self.k_proj_weight = nn.Parameter(torch.empty(d_model, kdim))
        self.v_proj_weight = nn.Parameter(torch.empty(d_model, kdim))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * d_model))
        self.out_proj = nn.Linear(d_model, d_model)
        for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
            nn.init.xavier_uniform_(w)
        self.dropout = dropout

    def forward(self, x, context, context_mask=None):
        B, T, E = x.shape
        S = context.shape[1]
        H = self.num_heads
        D = E // H
        b_q, b_k, b_v = self.in_proj_bias.split(E)
        q = F.linear(x, self.q_proj_weight, b_q).view(B, T, H, D).transpose(1, 2)
        k = F.linear(context, self.k_proj_weight, b_k).view(B, S, H, D).transpose(1, 2)
        v = F.linear(context, self.v_proj_weight, b_v).view(B, S, H, D).transpose(1, 2)
        s = q @ k.transpose(-2, -1) / math.sqrt(D)
        if context_mask is not None:
            s = s.masked_fill(~context_mask[:, None, None, :], float("-inf"))
        p = F.dropout(s.softmax(-1), self.dropout, self.training)
        return self.out_proj((p @ v).transpose(1, 2).reshape(B, T, E))
