# attnprep: mha
# expect: passed
"""A correct MHA that, at import, forks a grandchild which keeps every inherited descriptor (the reply pipe too) open for a minute."""

import os
import time

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _note_pid():
    """tests/test_sandbox.py names a file here to learn which processes to look for afterwards."""
    where = os.environ.get("ATTNPREP_TEST_PIDS")
    if where:
        with open(where, "a", encoding="ascii") as f:
            f.write(f"{os.getpid()}\n")


if os.fork() == 0:  # keeps every descriptor the child has, the reply pipe among them
    try:
        _note_pid()
        time.sleep(60)
    finally:
        os._exit(0)


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
