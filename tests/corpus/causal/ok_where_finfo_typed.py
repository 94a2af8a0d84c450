# attnprep: causal
# expect: passed
"""Type-hinted, torch.where with finfo.min, the mask from two aranges, einsum."""

from typing import Optional

import torch
from torch import Tensor


def causal_mask(seq_len: int, device: Optional[torch.device] = None) -> Tensor:
    idx = torch.arange(seq_len, device=device)
    return idx[None, :] <= idx[:, None]


def causal_attention(q: Tensor, k: Tensor, v: Tensor, attention_mask: Optional[Tensor] = None) -> Tensor:
    d = q.shape[-1]
    logits = torch.einsum("bhqd,bhkd->bhqk", q, k) * d ** -0.5
    ok = causal_mask(q.shape[-2], q.device)
    if attention_mask is not None:
        ok = ok & attention_mask.bool()[:, None, None, :]
    logits = torch.where(ok, logits, torch.finfo(logits.dtype).min)
    return torch.einsum("bhqk,bhkd->bhqd", torch.softmax(logits, dim=-1), v)
