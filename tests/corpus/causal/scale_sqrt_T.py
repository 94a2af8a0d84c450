# attnprep: causal
# expect: wrong_output
"""Scale taken from the wrong axis: q.size(-2) (the sequence length) instead of q.size(-1)."""

import math

import torch
import torch.nn.functional as F


def causal_mask(seq_len, device=None):
    return torch.tril(torch.ones((seq_len, seq_len), device=device)).to(torch.bool)


def causal_attention(q, k, v, attention_mask=None):
    d_k = q.size(-2)
    attn = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    mask = causal_mask(q.size(2), q.device)
    if attention_mask is not None:
        mask = mask & attention_mask.unsqueeze(1).unsqueeze(2)
    attn = attn.masked_fill(mask == False, -1e9)  # noqa: E712
    return torch.matmul(F.softmax(attn, dim=-1), v)
