# attnprep: causal
# expect: passed
"""Correct: causal_mask itself a @torch.jit.script function (Optional[torch.device] argument)."""
import math
from typing import Optional

import torch


@torch.jit.script
def causal_mask(seq_len: int, device: Optional[torch.device] = None) -> torch.Tensor:
    r = torch.arange(seq_len, device=device)
    return r.unsqueeze(0) <= r.unsqueeze(1)


def causal_attention(q, k, v, attention_mask=None):
    T = q.size(-2)
    keep = causal_mask(T, q.device)
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    return torch.matmul(s.masked_fill(~keep, float("-inf")).softmax(-1), v)
