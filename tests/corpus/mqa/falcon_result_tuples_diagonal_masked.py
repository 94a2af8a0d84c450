# attnprep: mqa
# expect: wrong_output
# diagnosis: causal_masks_diagonal
"""Rust habits: helpers return ("Ok", value) / ("Err", message) tuples that the caller unwraps; Falcon's
multi-query naming (query, key, value, dense, attention_dropout)."""
import math

import torch
import torch.nn as nn


def ok(value):
    return ("Ok", value)


def err(message):
    return ("Err", message)


def unwrap(result):
    tag, payload = result
    if tag == "Err":
        raise ValueError(payload)
    return payload


def causal_block(T, device):
    if T <= 0:
        return err(f"sequence length must be positive, got {T}")
    return ok(torch.ones(T, T, dtype=torch.bool, device=device).triu(0))


def key_padding(attention_mask):
    if attention_mask.dtype != torch.bool:
        return err(f"attention_mask must be bool, got {attention_mask.dtype}")
    return ok(~attention_mask[:, None, None, :])


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, self.head_dim)
        self.value = nn.Linear(d_model, self.head_dim)
        self.dense = nn.Linear(d_model, d_model)
        self.attention_dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.query(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, T, D)
        k = self.key(x)[:, None]  # (B, 1, T, D): one key head for all
        v = self.value(x)[:, None]
        att = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        if is_causal:
            att = att.masked_fill(unwrap(causal_block(T, x.device)), float("-inf"))
        if attention_mask is not None:
            att = att.masked_fill(unwrap(key_padding(attention_mask)), float("-inf"))
        att = self.attention_dropout(att.softmax(-1))
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.dense(y)
# bug-line: 30
