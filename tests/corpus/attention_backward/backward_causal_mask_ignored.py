# attnprep: attention_backward
# expect: wrong_output
# diagnosis: backward_causal_mask_ignored
"""The backward recomputes P without the causal mask (is_causal is never read): the cases
without a mask pass, the causal ones fail."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    scale = 1.0 / math.sqrt(q.shape[-1])
    P = torch.softmax(q @ k.transpose(-1, -2) * scale, dim=-1)  # recompute the probabilities
    dV = P.transpose(-1, -2) @ dout
    dP = dout @ v.transpose(-1, -2)
    dS = P * (dP - (P * dP).sum(-1, keepdim=True))
    dQ = dS @ k * scale
    dK = dS.transpose(-1, -2) @ q * scale
    return dQ, dK, dV
