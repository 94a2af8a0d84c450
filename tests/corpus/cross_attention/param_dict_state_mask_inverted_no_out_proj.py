# attnprep: cross_attention
# expect: mask_leak
# diagnosis: padding_mask_inverted + output_proj_skipped
"""Dict-of-tensors state: every weight and bias in one nn.ParameterDict (wq, bq, wk, bk, wv, bv, wo,
bo, each wX stored (out, in) as nn.Linear would), a pure `attend(p, x, ctx, mask)` function over it,
F.linear everywhere. Two slips: the padding mask is used the wrong way round (masked_fill where the
context token is real), and the result is returned before the output projection."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def init_params(d_model, d_context):
    def linear(n_out, n_in):
        layer = nn.Linear(n_in, n_out)
        return layer.weight.detach().clone(), layer.bias.detach().clone()

    p = {}
    for name, n_in in (("q", d_model), ("k", d_context), ("v", d_context), ("o", d_model)):
        w, b = linear(d_model, n_in)
        p["w" + name], p["b" + name] = nn.Parameter(w), nn.Parameter(b)
    return nn.ParameterDict(p)


def split_heads(t, n_heads):  # (B, S, C) -> (B, H, S, D)
    return t.unflatten(-1, (n_heads, -1)).transpose(1, 2)


def attend(p, x, ctx, mask, n_heads):
    q = split_heads(F.linear(x, p["wq"], p["bq"]), n_heads)
    k = split_heads(F.linear(ctx, p["wk"], p["bk"]), n_heads)
    v = split_heads(F.linear(ctx, p["wv"], p["bv"]), n_heads)
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])  # (B, H, T, S)
    if mask is not None:
        s = s.masked_fill(mask[:, None, None, :], float("-inf"))
    y = torch.softmax(s, dim=-1) @ v  # (B, H, T, D)
    y = y.transpose(1, 2).flatten(2)  # (B, T, C)
    return y


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        self.n_heads = num_heads
        self.p = init_params(d_model, d_context or d_model)

    def forward(self, x, context, context_mask=None):
        return attend(self.p, x, context, context_mask, self.n_heads)
# bug-line: 38, 41
