# attnprep: attention_backward
# expect: passed
"""einsum throughout, the row-sum computed as rowsum(dout ⊙ out) (FlashAttention-2's D_i), torch.where
for the causal mask, typed."""

import math
from typing import Tuple

import torch
from torch import Tensor


def attention_backward(q: Tensor, k: Tensor, v: Tensor, dout: Tensor, is_causal: bool = False) -> Tuple[Tensor, Tensor, Tensor]:
    L, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = 1 / math.sqrt(D)
    s = torch.einsum("bhld,bhsd->bhls", q, k) * scale
    if is_causal:
        keep = torch.arange(S, device=q.device)[None, :] <= torch.arange(L, device=q.device)[:, None]
        s = torch.where(keep, s, float("-inf"))
    p = torch.softmax(s, dim=-1)
    out = torch.einsum("bhls,bhsd->bhld", p, v)
    delta = (dout * out).sum(-1, keepdim=True)  # D_i
    dv = torch.einsum("bhls,bhld->bhsd", p, dout)
    dp = torch.einsum("bhld,bhsd->bhls", dout, v)
    ds = p * (dp - delta) * scale
    return torch.einsum("bhls,bhsd->bhld", ds, k), torch.einsum("bhls,bhld->bhsd", ds, q), dv
