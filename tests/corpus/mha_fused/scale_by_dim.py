# attnprep: mha_fused
# expect: wrong_output
# diagnosis: scale_by_dim
"""nanoGPT style, but the scale is 1 / head_size instead of 1 / sqrt(head_size)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        assert d_model % num_heads == 0
        # key, query, value projections for all heads, but in a batch
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        # output projection
        self.c_proj = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)
        self.n_head = num_heads
        self.n_embd = d_model

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.size()  # batch size, sequence length, embedding dimensionality (n_embd)
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)

        att = (q @ k.transpose(-2, -1)) * (1.0 / k.size(-1))
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device).view(1, 1, T, T)
        if is_causal:
            keep = keep.tril()
        if attention_mask is not None:
            keep = keep & attention_mask.view(B, 1, 1, T)
        att = att.masked_fill(~keep, torch.finfo(att.dtype).min)
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v  # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble all head outputs side by side
        return self.c_proj(y), att
