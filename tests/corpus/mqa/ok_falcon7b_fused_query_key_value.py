# attnprep: mqa
# expect: passed
"""Correct: Falcon-7B's multi-query layer: one query_key_value of width d_model + 2 * head_dim split by _split_heads, dense for the output; == 0 on the padding mask."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiQueryAttention(nn.Module):
    """Falcon-7B style: one query_key_value projection of width d_model + 2 * head_dim (multi_query=True)."""

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.query_key_value = nn.Linear(d_model, d_model + 2 * self.head_dim)
        self.dense = nn.Linear(d_model, d_model)
        self.attention_dropout = nn.Dropout(dropout)

    def _split_heads(self, fused_qkv):
        batch_size, seq_length, three_times_hidden_size = fused_qkv.shape
        fused_qkv = fused_qkv.view(batch_size, seq_length, self.num_heads + 2, self.head_dim)
        return fused_qkv[..., :-2, :], fused_qkv[..., [-2], :], fused_qkv[..., [-1], :]

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q, k, v = self._split_heads(self.query_key_value(x))  # (B,T,H,D), (B,T,1,D), (B,T,1,D)
        q = q.transpose(1, 2)
        k = k.transpose(1, 2)
        v = v.transpose(1, 2)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim)  # k broadcasts over heads
        neg = torch.finfo(scores.dtype).min
        if attention_mask is not None:
            scores = scores.masked_fill(attention_mask[:, None, None, :] == 0, neg)
        if is_causal:
            scores = scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), 1), neg)
        p = self.attention_dropout(F.softmax(scores, dim=-1))
        return self.dense((p @ v).transpose(1, 2).reshape(B, T, C))
