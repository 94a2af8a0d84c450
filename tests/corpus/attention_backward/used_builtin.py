# attnprep: attention_backward
# expect: used_builtin
# diagnosis: used_builtin
"""torch.autograd.grad of the forward: autograd does the exercise."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    with torch.enable_grad():
        q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
        s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        if is_causal:
            s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
        out = torch.softmax(s, dim=-1) @ v
        return torch.autograd.grad(out, (q, k, v), dout)
