# attnprep: mha
# expect: passed
"""Correct: causal masks memoised in a dict on the instance (made on x.device on the first call of each length)."""
import math
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self._masks = {}

    def _causal(self, T, device):
        if T not in self._masks:
            self._masks[T] = torch.ones(T, T, dtype=torch.bool, device=device).triu(1)
        return self._masks[T]

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        sp = lambda t: t.view(B, T, self.h, -1).transpose(1, 2)
        q, k, v = sp(self.q_proj(x)), sp(self.k_proj(x)), sp(self.v_proj(x))
        s = q @ k.transpose(-2, -1) / math.sqrt(C // self.h)
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            s = s.masked_fill(self._causal(T, x.device), float("-inf"))
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))
