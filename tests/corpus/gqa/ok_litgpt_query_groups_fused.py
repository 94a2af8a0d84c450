# attnprep: gqa
# expect: passed
"""Correct: litgpt's CausalSelfAttention for GQA: one fused self.attn of (n_head + 2 *
n_query_groups) * head_size out-features split by sizes [q; k; v], the key / value groups expanded
to the query heads with k[:, :, None].expand(...).reshape (repeat_interleave order), self.proj."""

import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.n_head, self.n_query_groups = num_heads, num_kv_heads
        self.head_size = d_model // num_heads
        self.attn = nn.Linear(d_model, (num_heads + 2 * num_kv_heads) * self.head_size)
        self.proj = nn.Linear(num_heads * self.head_size, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        hs, nh, ng = self.head_size, self.n_head, self.n_query_groups
        q, k, v = self.attn(x).split((nh * hs, ng * hs, ng * hs), dim=-1)
        q = q.view(B, T, nh, hs).transpose(1, 2)
        k = k.view(B, T, ng, hs).transpose(1, 2)
        v = v.view(B, T, ng, hs).transpose(1, 2)
        if ng != nh:
            q_per_kv = nh // ng
            k = k[:, :, None].expand(B, ng, q_per_kv, T, hs).reshape(B, nh, T, hs)
            v = v[:, :, None].expand(B, ng, q_per_kv, T, hs).reshape(B, nh, T, hs)
        att = q @ k.mT / math.sqrt(hs)
        allowed = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            allowed = torch.tril(allowed)
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        att = att.masked_fill(~allowed, float("-inf")).softmax(-1)
        return self.proj((att @ v).transpose(1, 2).reshape(B, T, nh * hs))
