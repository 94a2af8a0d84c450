# attnprep: mha
# expect: mask_leak
# diagnosis: causal_leaks_next
"""nanoGPT-like register_buffer mask built with tril(diagonal=1): each token also sees the next one."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, max_len=512):
        super().__init__()
        self.n_head = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)
        self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len), diagonal=1).bool(), persistent=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        hs = C // self.n_head
        q = self.q_proj(x).view(B, T, self.n_head, hs).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_head, hs).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n_head, hs).transpose(1, 2)
        att = q @ k.transpose(-2, -1) / math.sqrt(hs)
        if is_causal:
            att = att.masked_fill(~self.mask[:T, :T], float("-inf"))
        if attention_mask is not None:
            att = att.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        att = self.drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.o_proj(y)
# bug-line: 22
