# attnprep: cross_attention
# expect: wrong_output
# diagnosis: missing_scale
"""No 1/sqrt(dim_head) on the scores (self.scale is never used), lucidrains/Perceiver style: to_q, one to_kv = nn.Linear(d_context, 2 * inner) read with
.chunk(2, dim=-1), einsum over heads, to_out. The grader maps to_kv's rows to k_proj and v_proj."""

import torch
from torch import einsum, nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        context_dim = d_context if d_context is not None else d_model
        dim_head = d_model // num_heads
        inner_dim = dim_head * num_heads
        self.scale = dim_head ** -0.5
        self.heads = num_heads
        self.to_q = nn.Linear(d_model, inner_dim)
        self.to_kv = nn.Linear(context_dim, inner_dim * 2)
        self.dropout = nn.Dropout(dropout)
        self.to_out = nn.Linear(inner_dim, d_model)

    def forward(self, x, context, context_mask=None):
        h = self.heads
        q = self.to_q(x)
        k, v = self.to_kv(context).chunk(2, dim=-1)
        B, N, _ = q.shape
        q, k, v = (t.reshape(B, t.shape[1], h, -1).transpose(1, 2) for t in (q, k, v))
        sim = einsum("b h i d, b h j d -> b h i j", q, k)
        if context_mask is not None:
            max_neg_value = -torch.finfo(sim.dtype).max
            sim = sim.masked_fill(~context_mask[:, None, None, :], max_neg_value)
        attn = sim.softmax(dim=-1)
        attn = self.dropout(attn)
        out = einsum("b h i j, b h j d -> b h i d", attn, v)
        out = out.transpose(1, 2).reshape(B, N, -1)
        return self.to_out(out)
# bug-line: 30
