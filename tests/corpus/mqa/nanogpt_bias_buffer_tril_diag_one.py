# attnprep: mqa
# expect: mask_leak
# diagnosis: causal_leaks_next
"""nanoGPT's CausalSelfAttention adapted to one shared K/V head: the registered `bias` buffer holds the tril."""
import math

import torch
import torch.nn as nn
from torch.nn import functional as F


class MultiQueryAttention(nn.Module):
    block_size = 1024

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        assert d_model % num_heads == 0
        self.n_head = num_heads
        self.n_embd = d_model
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model // num_heads)
        self.v_proj = nn.Linear(d_model, d_model // num_heads)
        self.o_proj = nn.Linear(d_model, d_model)  # c_proj
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        self.register_buffer(
            "bias",
            torch.tril(torch.ones(self.block_size, self.block_size), diagonal=1).view(1, 1, self.block_size, self.block_size),
            persistent=False,
        )

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.size()
        q = self.q_proj(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = self.k_proj(x).view(B, T, 1, C // self.n_head).transpose(1, 2)  # (B, 1, T, hs)
        v = self.v_proj(x).view(B, T, 1, C // self.n_head).transpose(1, 2)  # (B, 1, T, hs)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        if is_causal:
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        if attention_mask is not None:
            att = att.masked_fill(attention_mask[:, None, None, :] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v  # (B, nh, T, T) x (B, 1, T, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        y = self.resid_dropout(self.o_proj(y))
        return y
# bug-line: 28
