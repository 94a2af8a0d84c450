# attnprep: causal
# expect: mask_leak
# diagnosis: mask_dtype + padding_mask_ignored
"""Structural pattern matching (match / case, Python 3.10) everywhere: on the device argument, on the
mask kind, and on the padding mask's type with class patterns."""
import math

import torch


def causal_mask(seq_len, device=None):
    match device:
        case None:
            where = "cpu"
        case str() | torch.device():
            where = device
    i = torch.arange(seq_len, device=where)
    return (i[None, :] <= i[:, None]).float()


def causal_attention(q, k, v, attention_mask=None):
    *_, T, D = q.shape
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D)
    blocked = ~causal_mask(T, device=q.device).bool()
    scores = scores.masked_fill(blocked, float("-inf"))
    match attention_mask:
        case None:
            pass
        case torch.Tensor(dtype=torch.float32):
            scores = scores.masked_fill(~attention_mask.bool()[:, None, None, :], float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.matmul(probs, v)
# bug-line: 18, 29
