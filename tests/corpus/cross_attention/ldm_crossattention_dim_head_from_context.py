# attnprep: cross_attention
# expect: wrong_output
# diagnosis: cross_scale_d_context
"""Stable Diffusion's ldm/modules/attention.py CrossAttention: exists() / default() helpers, to_q /
to_k / to_v without bias, to_out as nn.Sequential(Linear, Dropout), heads folded into the batch
('b n (h d) -> (b h) n d', written as reshape / permute since einops is not installed, with the
einops pattern in a comment), `sim = einsum('b i d, b j d -> b i j', q, k) * self.scale`, the mask
repeated over heads and filled with -finfo.max. The scale is the head width of the context,
(context_dim // heads) ** -0.5, not of the queries."""

import torch
from torch import einsum, nn


def exists(val):
    return val is not None


def default(val, d):
    return val if exists(val) else d


def fold_heads(t, h):
    # rearrange(t, 'b n (h d) -> (b h) n d', h=h)
    b, n, hd = t.shape
    return t.reshape(b, n, h, hd // h).permute(0, 2, 1, 3).reshape(b * h, n, hd // h)


def unfold_heads(t, h):
    # rearrange(t, '(b h) n d -> b n (h d)', h=h)
    bh, n, d = t.shape
    return t.reshape(bh // h, h, n, d).permute(0, 2, 1, 3).reshape(bh // h, n, h * d)


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        query_dim, heads = d_model, num_heads
        inner_dim = query_dim
        context_dim = default(d_context, query_dim)

        self.scale = (context_dim // heads) ** -0.5
        self.heads = heads

        self.to_q = nn.Linear(query_dim, inner_dim, bias=False)
        self.to_k = nn.Linear(context_dim, inner_dim, bias=False)
        self.to_v = nn.Linear(context_dim, inner_dim, bias=False)

        self.to_out = nn.Sequential(nn.Linear(inner_dim, query_dim), nn.Dropout(dropout))

    def forward(self, x, context=None, context_mask=None):
        h = self.heads

        q = self.to_q(x)
        context = default(context, x)
        k = self.to_k(context)
        v = self.to_v(context)

        q, k, v = map(lambda t: fold_heads(t, h), (q, k, v))

        sim = einsum("b i d, b j d -> b i j", q, k) * self.scale

        if exists(context_mask):
            max_neg_value = -torch.finfo(sim.dtype).max
            # repeat(mask, 'b j -> (b h) () j', h=h)
            mask = context_mask[:, None, None, :].expand(-1, h, 1, -1).reshape(-1, 1, context_mask.shape[-1])
            sim = sim.masked_fill(~mask, max_neg_value)

        # attention, what we cannot get enough of
        attn = sim.softmax(dim=-1)

        out = einsum("b i j, b j d -> b i d", attn, v)
        out = unfold_heads(out, h)
        return self.to_out(out)
# bug-line: 42
