# attnprep: cross_attention
# expect: wrong_output
"""einsum style whose merge permutes (B, H, T, D) with (0, 2, 3, 1): the features come out as (D, H) instead of (H, D)."""
import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        ctx = d_model if d_context is None else d_context
        self.n_heads, self.head_dim = num_heads, d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(ctx, d_model)
        self.wv = nn.Linear(ctx, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, x, context, context_mask=None):
        B, T, _ = x.shape
        S = context.shape[1]
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        k = self.wk(context).view(B, S, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        v = self.wv(context).view(B, S, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) / self.head_dim ** 0.5
        if context_mask is not None:
            s = s.masked_fill(~context_mask[:, None, None, :], float("-inf"))
        o = torch.einsum("bhqk,bhkd->bhqd", s.softmax(-1), v)
        o = o.permute(0, 2, 3, 1).reshape(B, T, -1)
        return self.wo(o)
# bug-line: 28
