# attnprep: gqa
# expect: passed
"""Correct: Megatron-LM habits for GQA: [s, b, h] inside, num_query_groups, key / value repeated
with repeat_interleave on the group axis, heads folded into the batch for torch.baddbmm with a
preallocated empty buffer and beta=0, the mask as Megatron's True = masked-out convention."""

import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.np, self.ng = num_heads, num_kv_heads
        self.hn = d_model // num_heads
        self.linear_q = nn.Linear(d_model, d_model)
        self.linear_k = nn.Linear(d_model, num_kv_heads * self.hn)
        self.linear_v = nn.Linear(d_model, num_kv_heads * self.hn)
        self.linear_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        h = x.transpose(0, 1)  # [s, b, h]
        sq, b, _ = h.shape
        q = self.linear_q(h).view(sq, b, self.np, self.hn)
        k = self.linear_k(h).view(sq, b, self.ng, self.hn)
        v = self.linear_v(h).view(sq, b, self.ng, self.hn)
        k = k.repeat_interleave(self.np // self.ng, dim=2)
        v = v.repeat_interleave(self.np // self.ng, dim=2)
        q = q.reshape(sq, b * self.np, self.hn).transpose(0, 1)  # [b*np, sq, hn]
        k = k.reshape(sq, b * self.np, self.hn).transpose(0, 1)
        v = v.reshape(sq, b * self.np, self.hn).transpose(0, 1)
        buf = torch.empty(b * self.np, sq, sq, dtype=q.dtype, device=q.device)
        scores = torch.baddbmm(buf, q, k.transpose(1, 2), beta=0.0, alpha=1.0 / math.sqrt(self.hn))
        scores = scores.view(b, self.np, sq, sq)
        masked_out = torch.zeros(b, 1, sq, sq, dtype=torch.bool, device=x.device)
        if is_causal:
            masked_out = masked_out | torch.triu(torch.ones(sq, sq, dtype=torch.bool, device=x.device), diagonal=1)
        if attention_mask is not None:
            masked_out = masked_out | ~attention_mask[:, None, None, :]
        scores = scores.masked_fill(masked_out, -10000.0)
        probs = scores.softmax(-1).view(b * self.np, sq, sq)
        ctx = torch.bmm(probs, v).view(b, self.np, sq, self.hn).permute(2, 0, 1, 3).reshape(sq, b, -1)
        return self.linear_proj(ctx).transpose(0, 1)
