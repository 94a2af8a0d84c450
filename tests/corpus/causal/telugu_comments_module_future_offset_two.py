# attnprep: causal
# expect: mask_leak
# diagnosis: causal_leaks_next
"""Telugu comments; the future is hidden from a module constant offset above the diagonal, written 2
(the next key stays visible to every query)."""
import math

import torch

FUTURE_FROM = 2


def causal_mask(seq_len, device=None):
    # భవిష్యత్తు స్థానాలు: వికర్ణం పైన
    future = torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device), diagonal=FUTURE_FROM)
    return ~future


def causal_attention(q, k, v, attention_mask=None):
    D = q.shape[-1]
    # స్కోర్లు, స్కేలు
    scores = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(D)
    keep = causal_mask(q.shape[-2], q.device)[None, None]
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :].bool()
    scores = scores.masked_fill(~keep, float("-inf"))
    return torch.einsum("bhij,bhjd->bhid", scores.softmax(dim=-1), v)
# bug-line: 10
