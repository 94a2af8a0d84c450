# attnprep: attention_backward
# expect: wrong_output
# diagnosis: backward_scale_missing
"""ast.literal_eval habits: the backward's switches are a Python-literal string (as a config file
would hold them) evaluated safely once; the switch that applies the chain rule's 1/sqrt(D) to dS
was written False."""
import ast
import math

import torch

FLAGS = ast.literal_eval("{'recompute': True, 'chain_scale': False}")


def forward_probs(q, k, is_causal, scale):
    s = q @ k.transpose(-2, -1) * scale
    if is_causal:
        L, S = s.shape[-2:]
        s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool, device=q.device).tril(), float("-inf"))
    return s.softmax(dim=-1)


def attention_backward(q, k, v, dout, is_causal=False):
    scale = 1.0 / math.sqrt(q.shape[-1])
    P = forward_probs(q, k, is_causal, scale)
    dV = P.transpose(-2, -1) @ dout
    dP = dout @ v.transpose(-2, -1)
    dS = P * (dP - (dP * P).sum(dim=-1, keepdim=True))
    if FLAGS["chain_scale"]:
        dS = dS * scale
    dQ = dS @ k
    dK = dS.transpose(-2, -1) @ q
    return dQ, dK, dV
# bug-line: 12
