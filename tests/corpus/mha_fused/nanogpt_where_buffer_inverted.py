# attnprep: mha_fused
# expect: mask_leak
# diagnosis: causal_inverted
"""nanoGPT-style with a registered tril buffer and torch.where: the where keeps the scores where the
buffer is 0 (the future) and blanks the past."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        self.n_head = num_heads
        self.n_embd = d_model
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)
        self.register_buffer("bias", torch.tril(torch.ones(512, 512)).view(1, 1, 512, 512), persistent=False)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.size()
        q, k, v = self.qkv_proj(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        if attention_mask is not None:
            att = att.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            att = torch.where(self.bias[:, :, :T, :T] == 0, att, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.o_proj(y)
# bug-line: 34
