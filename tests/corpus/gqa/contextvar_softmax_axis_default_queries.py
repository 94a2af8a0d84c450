# attnprep: gqa
# expect: wrong_output
# diagnosis: softmax_wrong_dim
"""contextvars habits: the attention's knobs live in ContextVars (softmax axis, mask fill) read
with .get() where they are used, so that a caller could change them for one block with a token
and reset it; the softmax axis's default was written -2 (over the queries)."""
import math
from contextvars import ContextVar

import torch
import torch.nn as nn

SOFTMAX_AXIS: ContextVar[int] = ContextVar("softmax_axis", default=-2)
MASK_FILL: ContextVar[float] = ContextVar("mask_fill", default=float("-inf"))


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.n_heads = num_heads
        self.n_kv = num_kv_heads
        self.d_head = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d_head)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d_head)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        g = self.n_heads // self.n_kv
        q = self.q_proj(x).view(B, T, self.n_kv, g, self.d_head)  # query heads grouped by KV head
        k = self.k_proj(x).view(B, T, self.n_kv, self.d_head)
        v = self.v_proj(x).view(B, T, self.n_kv, self.d_head)
        scores = torch.einsum("btkgd,bskd->bkgts", q, k) / math.sqrt(self.d_head)
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, None, :], MASK_FILL.get())
        if is_causal:
            future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(future, MASK_FILL.get())
        probs = scores.softmax(dim=SOFTMAX_AXIS.get())
        out = torch.einsum("bkgts,bskd->btkgd", probs, v).reshape(B, T, C)
        return self.o_proj(out)
# bug-line: 13
