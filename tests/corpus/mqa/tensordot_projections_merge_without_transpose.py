# attnprep: mqa
# expect: wrong_output
# diagnosis: merge_heads_no_transpose
"""Multi-query attention with torch.tensordot for every contraction (a habit from numpy's tensordot):
weights taken from the Linear layers, the single key / value head broadcast by tensordot over the
head axis of the query."""
import math

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.n_head = num_heads
        self.d_head = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.d_head)
        self.v_proj = nn.Linear(d_model, self.d_head)
        self.o_proj = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    @staticmethod
    def dense(x, layer):
        # x (..., in) . W^T (in, out) -> (..., out)
        return torch.tensordot(x, layer.weight, dims=([x.dim() - 1], [1])) + layer.bias

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.dense(x, self.q_proj).view(B, T, self.n_head, self.d_head).permute(0, 2, 1, 3)  # (B, H, T, D)
        k = self.dense(x, self.k_proj)  # (B, T, D)
        v = self.dense(x, self.v_proj)  # (B, T, D)
        scores = torch.einsum("bhtd,bsd->bhts", q, k) / math.sqrt(self.d_head)
        if attention_mask is not None:
            scores = scores.masked_fill(attention_mask[:, None, None, :] == 0, -1e9)
        if is_causal:
            scores = scores.masked_fill(torch.ones(T, T, device=x.device).triu(1).bool(), -1e9)
        w = self.drop(scores.softmax(-1))
        ctx = torch.einsum("bhts,bsd->bhtd", w, v)  # (B, H, T, D)
        ctx = ctx.reshape(B, T, C)
        return self.dense(ctx, self.o_proj)
# bug-line: 41
