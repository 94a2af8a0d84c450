# attnprep: mha
# expect: error
"""A correct MHA that, at import, writes 400 MiB into every pipe it may write to beyond stdout and stderr (the grader's reply pipe among them)."""

import fcntl
import os
import stat

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


CHUNK = b"x" * (1 << 20)
FLOOD = 400  # MiB to each pipe


def _flood():
    """Write 400 MiB into every pipe this process may write to, beyond stdout and stderr."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd < 3 or not stat.S_ISFIFO(os.fstat(fd).st_mode):
                continue
            if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_WRONLY:
                continue
            for _ in range(FLOOD):
                os.write(fd, CHUNK)
        except OSError:
            continue


_flood()


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
