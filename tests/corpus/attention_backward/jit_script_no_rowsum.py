# attnprep: attention_backward
# expect: wrong_output
# diagnosis: softmax_backward_no_rowsum
"""TorchScript (@torch.jit.script, typed) backward; dS is taken as P ⊙ dP, the rowsum term of the
softmax Jacobian left out."""
import math
from typing import Tuple

import torch
from torch import Tensor


@torch.jit.script
def attention_backward(q: Tensor, k: Tensor, v: Tensor, dout: Tensor,
                       is_causal: bool = False) -> Tuple[Tensor, Tensor, Tensor]:
    L = q.size(-2)
    S = k.size(-2)
    sm_scale = 1.0 / math.sqrt(float(q.size(-1)))
    s = torch.matmul(q, k.transpose(-2, -1)) * sm_scale
    if is_causal:
        future = torch.ones(L, S, dtype=torch.bool, device=q.device).triu(1)
        s = s.masked_fill(future, float("-inf"))
    p = torch.softmax(s, dim=-1)
    dv = torch.matmul(p.transpose(-2, -1), dout)
    dp = torch.matmul(dout, v.transpose(-2, -1))
    ds = p * dp
    dq = torch.matmul(ds, k) * sm_scale
    dk = torch.matmul(ds.transpose(-2, -1), q) * sm_scale
    return dq, dk, dv
# bug-line: 26
