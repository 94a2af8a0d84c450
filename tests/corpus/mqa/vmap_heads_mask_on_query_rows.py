# attnprep: mqa
# expect: mask_leak
# diagnosis: padding_mask_on_queries
# The mistake: the padding mask is put on the query rows (B, T, 1) instead of the key columns.
# torch.func.vmap over the query heads with the single K / V closed over (in_dims=None for them).
import math
import torch
import torch.nn as nn
from torch.func import vmap


def one_head(q, k, v, bias):
    # q (B, T, D), k, v (B, T, D), bias (B, T, T) additive
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + bias
    return torch.softmax(s, dim=-1) @ v


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        hd = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, hd)
        self.v_proj = nn.Linear(d_model, hd)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, -1).movedim(2, 0)  # (H, B, T, D)
        k, v = self.k_proj(x), self.v_proj(x)
        bias = x.new_zeros(B, T, T)
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask[:, :, None], float("-inf"))
        if is_causal:
            bias = bias.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        out = vmap(one_head, in_dims=(0, None, None, None))(q, k, v, bias)  # (H, B, T, D)
        return self.o_proj(out.movedim(0, 2).reshape(B, T, C))
# bug-line: 34
