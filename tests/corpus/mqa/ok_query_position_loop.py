# attnprep: mqa
# expect: passed
"""Correct: a loop over query positions (incremental decoding written for a full sequence), -inf where the
padding mask says False, cat of per-token outputs."""
import math
import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_dim)
        self.v_proj = nn.Linear(d_model, self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, D = self.num_heads, self.head_dim
        K, V = self.k_proj(x), self.v_proj(x)                         # (B, T, D)
        Q = self.q_proj(x).view(B, T, H, D)
        rows = []
        for t in range(T):
            last = t + 1 if is_causal else T
            s = torch.einsum("bhd,bsd->bhs", Q[:, t], K[:, :last]) / math.sqrt(D)
            if attention_mask is not None:
                s = s.masked_fill(~attention_mask[:, None, :last], float("-inf"))
            rows.append(torch.einsum("bhs,bsd->bhd", s.softmax(-1), V[:, :last]).reshape(B, C))
        return self.o_proj(torch.stack(rows, dim=1))
