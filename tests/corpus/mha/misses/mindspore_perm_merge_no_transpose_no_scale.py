# attnprep: mha
# expect: wrong_output
# diagnosis: merge_heads_no_transpose + missing_scale
"""MindSpore habits: ops.transpose with perm tuples, ops.BatchMatMul(transpose_b=True) written as a
helper, a `scale_factor` attribute that is set and never used, and the merge reshapes (B, N, T, Hd)
straight to (B, T, C) without the inverse perm."""

import torch
import torch.nn as nn


def batch_matmul(a, b, transpose_b=False):
    return torch.matmul(a, b.permute(0, 1, 3, 2) if transpose_b else b)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.n_head, self.size_per_head = num_heads, d_model // num_heads
        self.scale_factor = self.size_per_head ** -0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.prob_dropout = nn.Dropout(dropout)
        self.trans_perm = (0, 2, 1, 3)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).reshape(B, T, self.n_head, self.size_per_head).permute(*self.trans_perm)
        k = self.k_proj(x).reshape(B, T, self.n_head, self.size_per_head).permute(*self.trans_perm)
        v = self.v_proj(x).reshape(B, T, self.n_head, self.size_per_head).permute(*self.trans_perm)
        score = batch_matmul(q, k, transpose_b=True)
        adder = torch.zeros(B, 1, T, T, dtype=score.dtype, device=x.device)
        if attention_mask is not None:
            adder = adder.masked_fill(~attention_mask.reshape(B, 1, 1, T), -10000.0)
        if is_causal:
            upper = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            adder = adder.masked_fill(upper, -10000.0)
        probs = self.prob_dropout(torch.softmax(score + adder, dim=-1))
        ctx = batch_matmul(probs, v)
        ctx = ctx.reshape(B, T, C)
        return self.o_proj(ctx)
# bug-line: 33, 42
