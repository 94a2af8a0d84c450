# attnprep: mqa
# expect: passed
"""An Eiffel programmer's design by contract: every routine opens with a `require` block of
preconditions and closes with an `ensure` block of postconditions (written as asserts on shapes),
`Result` as the returned local, and feature names in lower_snake with a class invariant method."""
import math

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        # require: d_model divisible by num_heads
        assert d_model % num_heads == 0, "require: heads divide the width"
        self.count_heads = num_heads
        self.head_width = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_width)
        self.v_proj = nn.Linear(d_model, self.head_width)
        self.o_proj = nn.Linear(d_model, d_model)
        self.invariant()

    def invariant(self):
        assert self.count_heads * self.head_width == self.q_proj.out_features

    def query_heads(self, x):
        # require
        assert x.dim() == 3
        b, t, _ = x.shape
        Result = self.q_proj(x).reshape(b, t, self.count_heads, self.head_width).transpose(1, 2)
        # ensure
        assert Result.shape == (b, self.count_heads, t, self.head_width)
        return Result

    def blocked_positions(self, b, t, attention_mask, is_causal, device):
        Result = torch.zeros(b, 1, t, t, dtype=torch.bool, device=device)
        if attention_mask is not None:
            Result = Result | (attention_mask == 0)[:, None, None, :]
        if is_causal:
            i = torch.arange(t, device=device)
            Result = Result | (i[None, :] > i[:, None])
        # ensure: a (b, 1, t, t) boolean
        assert Result.dtype == torch.bool
        return Result

    def forward(self, x, attention_mask=None, is_causal=False):
        b, t, c = x.shape
        q = self.query_heads(x)  # (b, h, t, d)
        k = self.k_proj(x)[:, None]  # (b, 1, t, d)
        v = self.v_proj(x)[:, None]
        scores = torch.einsum("bhid,bxjd->bhij", q, k) / math.sqrt(self.head_width)
        scores = scores.masked_fill(self.blocked_positions(b, t, attention_mask, is_causal, x.device), -1e9)
        probabilities = scores.softmax(dim=-1)
        Result = torch.einsum("bhij,bxjd->bihd", probabilities, v).reshape(b, t, c)
        Result = self.o_proj(Result)
        # ensure: the width is kept
        assert Result.shape == x.shape
        return Result
