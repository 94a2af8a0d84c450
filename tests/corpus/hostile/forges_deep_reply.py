# attnprep: mha
# expect: error
"""A correct MHA that, at import, finds the grader's channel object through gc.get_objects() and sends a final reply nested 100,000 lists deep, then exits."""

import gc
import os
import sys

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


DEPTH = 100_000


def _forge():
    """Find the grader's channel in this process and send a final reply nested 100,000 lists deep."""
    for obj in gc.get_objects():
        if type(obj).__name__ == "Channel" and hasattr(obj, "_send"):
            obj._send(b"R", b'{"configs": ' + b"[" * DEPTH + b"]" * DEPTH + b"}")
            sys.stdout.flush()
            os._exit(0)
    raise RuntimeError("no channel found to forge a reply on")


_forge()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        assert d_model % num_heads == 0
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, D = self.num_heads, self.head_dim
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        k = self.k_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        v = self.v_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)

        scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, T)
        if is_causal:
            causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
            scores = scores.masked_fill(~causal, float("-inf"))
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))

        attn = self.dropout(scores.softmax(dim=-1))
        out = (attn @ v).transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.o_proj(out)
