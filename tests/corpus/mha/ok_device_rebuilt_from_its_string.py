# attnprep: mha
# expect: passed
"""Correct: a cached causal table per (length, device), the device normalised the way some
codebases do it (torch.device(str(...))) so that "cuda" and "cuda:0" share one entry."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

_TRIL: dict = {}


def _tril(n: int, device) -> torch.Tensor:
    device = torch.device(str(device))
    key = (n, device)
    if key not in _TRIL:
        _TRIL[key] = torch.ones(n, n, dtype=torch.bool, device=device).tril()
    return _TRIL[key]


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        assert d_model % n_heads == 0
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, causal=False):
        B, T, C = x.shape
        q, k, v = (p(x).view(B, T, self.n_heads, self.d_head).transpose(1, 2)
                   for p in (self.q_proj, self.k_proj, self.v_proj))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.d_head)
        keep = torch.ones(1, 1, T, T, dtype=torch.bool, device=torch.device(x.device.type))
        if causal:
            keep = keep & _tril(T, x.device)
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]
        att = F.softmax(att.masked_fill(~keep, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.o_proj(y)
