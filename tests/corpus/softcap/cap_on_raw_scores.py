# attnprep: softcap
# expect: wrong_output
# diagnosis: softcap_before_scale
"""The cap on q·kᵀ, the 1/sqrt(D) applied after it."""
import math

import torch
import torch.nn.functional as F


def softcap_causal_mask(seq_len, device=None):
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


def softcap_attention(q, k, v, softcap, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    scores = q @ k.transpose(-2, -1)
    scores = softcap * torch.tanh(scores / softcap)
    scores = scores / math.sqrt(D)
    allowed = softcap_causal_mask(T, q.device)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    scores = scores.masked_fill(~allowed, float("-inf"))
    return F.softmax(scores, dim=-1) @ v
# bug-line: 18
