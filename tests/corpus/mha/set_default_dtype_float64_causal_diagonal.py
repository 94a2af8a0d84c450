# attnprep: mha
# expect: wrong_output
# diagnosis: causal_masks_diagonal
"""torch.set_default_dtype(torch.float64) at the top of the file, the layers float64; the causal mask
is triu(0), so each query is also kept from its own key."""

import math

import torch
import torch.nn as nn

torch.set_default_dtype(torch.float64)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        dtype = x.dtype
        x = x.to(self.q_proj.weight.dtype)
        B, T, C = x.shape
        D = C // self.h
        q, k, v = (p(x).view(B, T, self.h, D).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        s = q @ k.transpose(-1, -2) / math.sqrt(D)
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(0), float("-inf"))
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        o = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(o).to(dtype)
# bug-line: 32
