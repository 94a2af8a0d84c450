# attnprep: gqa
# expect: wrong_output
# diagnosis: scale_inverted
"""unsqueeze + expand + flatten for the groups; the scores are multiplied by head_dim ** 0.5."""

import math

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.n_heads = num_heads
        self.n_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        kv_dim = num_kv_heads * self.head_dim
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, kv_dim)
        self.wv = nn.Linear(d_model, kv_dim)
        self.wo = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def _heads(self, t, n):
        B, T, _ = t.shape
        return t.view(B, T, n, self.head_dim).transpose(1, 2)  # (B, n, T, hd)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        rep = self.n_heads // self.n_kv_heads

        q = self._heads(self.wq(x), self.n_heads)  # (B, H, T, hd)
        k = self._heads(self.wk(x), self.n_kv_heads)  # (B, G, T, hd)
        v = self._heads(self.wv(x), self.n_kv_heads)  # (B, G, T, hd)
        k = k.unsqueeze(2).expand(-1, -1, rep, -1, -1).flatten(1, 2)  # (B, H, T, hd)
        v = v.unsqueeze(2).expand(-1, -1, rep, -1, -1).flatten(1, 2)  # (B, H, T, hd)

        bias = torch.zeros(B, 1, T, T, dtype=x.dtype, device=x.device)
        if is_causal:
            bias = bias.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        if attention_mask is not None:
            bias = bias.masked_fill(attention_mask.logical_not().view(B, 1, 1, T), float("-inf"))

        attn = torch.softmax(q @ k.transpose(-1, -2) * self.head_dim ** 0.5 + bias, dim=-1)  # (B, H, T, T)
        out = self.drop(attn) @ v  # (B, H, T, hd)
        out = out.transpose(1, 2).reshape(B, T, C)
        return self.wo(out), attn
