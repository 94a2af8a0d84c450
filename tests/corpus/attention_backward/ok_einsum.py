# attnprep: attention_backward
# expect: passed
"""einsum everywhere, with type hints."""
import math

import torch
from torch import Tensor


def attention_backward(q: Tensor, k: Tensor, v: Tensor, dout: Tensor, is_causal: bool = False) -> tuple[Tensor, Tensor, Tensor]:
    scale = 1 / math.sqrt(q.size(-1))
    s = torch.einsum("bhid,bhjd->bhij", q, k) * scale
    if is_causal:
        i = torch.arange(q.size(-2), device=q.device).view(-1, 1)
        j = torch.arange(k.size(-2), device=q.device).view(1, -1)
        s = s.masked_fill(j > i, float("-inf"))
    p = s.softmax(dim=-1)
    dv = torch.einsum("bhij,bhid->bhjd", p, dout)
    dp = torch.einsum("bhid,bhjd->bhij", dout, v)
    ds = p * (dp - torch.einsum("bhij,bhij->bhi", dp, p).unsqueeze(-1))
    dq = torch.einsum("bhij,bhjd->bhid", ds, k) * scale
    dk = torch.einsum("bhij,bhid->bhjd", ds, q) * scale
    return dq, dk, dv
