# attnprep: cross_attention
# expect: error
# diagnosis: cross_kv_from_x
"""x-transformers' Attention with `dim_context`: `kv_input = default(context, x)`-style helpers,
`exists`, to_q / to_k / to_v / to_out, a `context_mask` folded into one `mask`, heads split and
merged by small named functions."""
import torch
import torch.nn as nn


def exists(val):
    return val is not None


def default(val, d):
    return val if exists(val) else d


def to_heads(t, h):
    b, n, _ = t.shape
    return t.reshape(b, n, h, -1).transpose(1, 2)


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        dim_context = default(d_context, d_model)
        self.heads = num_heads
        self.scale = (d_model // num_heads) ** -0.5
        self.to_q = nn.Linear(d_model, d_model)
        self.to_k = nn.Linear(dim_context, d_model)
        self.to_v = nn.Linear(dim_context, d_model)
        self.to_out = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, context, context_mask=None):
        h = self.heads
        kv_input = default(x, context)
        q = to_heads(self.to_q(x), h)
        k = to_heads(self.to_k(kv_input), h)
        v = to_heads(self.to_v(kv_input), h)
        sim = (q @ k.transpose(-1, -2)) * self.scale
        mask = context_mask
        if exists(mask):
            sim = sim.masked_fill(~mask[:, None, None, :], -torch.finfo(sim.dtype).max)
        attn = self.dropout(sim.softmax(dim=-1))
        out = (attn @ v).transpose(1, 2).flatten(2)
        return self.to_out(out)
# bug-line: 38
