# attnprep: attention_backward
# expect: wrong_output
"""Type-hinted backward whose dq forgets the chain rule through the scale (dk has it)."""

import math

import torch
from torch import Tensor


def attention_backward(q: Tensor, k: Tensor, v: Tensor, dout: Tensor,
                       is_causal: bool = False) -> tuple[Tensor, Tensor, Tensor]:
    scale: float = q.shape[-1] ** -0.5
    logits: Tensor = torch.einsum("bhld,bhsd->bhls", q, k) * scale
    if is_causal:
        future: Tensor = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).triu(diagonal=1)
        logits = logits.masked_fill(future, -math.inf)
    p: Tensor = logits.softmax(dim=-1)
    dv: Tensor = torch.einsum("bhls,bhld->bhsd", p, dout)
    dp: Tensor = torch.einsum("bhld,bhsd->bhls", dout, v)
    ds: Tensor = p * (dp - (dp * p).sum(-1, keepdim=True))
    dq: Tensor = torch.einsum("bhls,bhsd->bhld", ds, k)
    dk: Tensor = torch.einsum("bhls,bhld->bhsd", ds, q) * scale
    return dq, dk, dv
# bug-line: 22
