# attnprep: mha
# expect: wrong_output
# diagnosis: dropout_in_eval
"""A contextlib.contextmanager `heads(x)` yielding the split tensor and merging whatever is put back,
typing.Final constants, the attention dropout called as F.dropout(p, training=True) (copied from a
training script), so it stays on in eval mode."""

import contextlib
import math
from typing import Final

import torch
import torch.nn as nn
import torch.nn.functional as F

NEG: Final = float("-inf")


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h, self.dk, self.p = num_heads, d_model // num_heads, dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def split(self, t):
        B, T, _ = t.shape
        return t.view(B, T, self.h, self.dk).transpose(1, 2)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        s = q @ k.transpose(-2, -1) / math.sqrt(self.dk)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], NEG)
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), NEG)
        a = F.dropout(s.softmax(-1), p=self.p, training=True)
        return self.o_proj((a @ v).transpose(1, 2).reshape(B, T, C))
# bug-line: 40
