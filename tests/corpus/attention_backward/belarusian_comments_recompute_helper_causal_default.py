# attnprep: attention_backward
# expect: wrong_output
# diagnosis: backward_causal_mask_ignored
"""Belarusian comments; the probabilities are recomputed by a helper whose causal flag defaults to
False, and the backward calls it without passing is_causal on."""
import math

import torch


def _probs(q, k, causal=False):
    # Пералік імавернасцей з захаваных q і k
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        L, S = s.shape[-2], s.shape[-1]
        s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool, device=s.device).tril(), float("-inf"))
    return torch.softmax(s, dim=-1)


def attention_backward(q, k, v, dout, is_causal=False):
    scale = 1.0 / math.sqrt(q.shape[-1])
    P = _probs(q, k)
    # Градыент па v: P^T dO
    dv = P.transpose(-2, -1) @ dout
    dP = dout @ v.transpose(-2, -1)
    # Адваротны праход праз softmax
    dS = P * (dP - (dP * P).sum(dim=-1, keepdim=True))
    dq = dS @ k * scale
    dk = dS.transpose(-2, -1) @ q * scale
    return dq, dk, dv
# bug-line: 22
