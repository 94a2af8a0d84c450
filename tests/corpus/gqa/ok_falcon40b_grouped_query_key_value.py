# attnprep: gqa
# expect: passed
"""Correct: Falcon-40B's query_key_value for GQA: rows kv group by kv group, each its query heads, then its key head, then its value head; broadcast_to over the group."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupedQueryAttention(nn.Module):
    """Falcon-40B (new_decoder_architecture): one query_key_value whose rows go group by group,
    each kv group holding its n_rep query heads, then its key head, then its value head."""

    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        qkv_out_dim = (num_kv_heads * 2 + num_heads) * self.head_dim
        self.query_key_value = nn.Linear(d_model, qkv_out_dim)
        self.dense = nn.Linear(d_model, d_model)
        self.attention_dropout = nn.Dropout(dropout)

    def _split_heads(self, fused_qkv):
        batch, seq_len, _ = fused_qkv.shape
        qkv = fused_qkv.view(batch, seq_len, -1, self.num_heads // self.num_kv_heads + 2, self.head_dim)
        query = qkv[:, :, :, :-2]
        key = qkv[:, :, :, [-2]]
        value = qkv[:, :, :, [-1]]
        key = torch.broadcast_to(key, query.shape)
        value = torch.broadcast_to(value, query.shape)
        query, key, value = [x.flatten(2, 3) for x in (query, key, value)]
        return query, key, value

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = self._split_heads(self.query_key_value(x))            # (B, T, H, D) each
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        allowed = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            allowed = allowed.tril()
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        s = s.masked_fill(~allowed, torch.finfo(s.dtype).min)
        p = self.attention_dropout(F.softmax(s, dim=-1))
        return self.dense((p @ v).transpose(1, 2).reshape(B, T, C))
