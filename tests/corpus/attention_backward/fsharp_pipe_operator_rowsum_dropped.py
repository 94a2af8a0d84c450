# attnprep: attention_backward
# expect: wrong_output
# diagnosis: softmax_backward_no_rowsum
"""An F# programmer's pipelines: a Pipe wrapper whose `|` operator applies the next function
(`x |> f |> g` written `Pipe(x) | f | g`), small curried helpers built with closures; the softmax
backward as a curried stage `softmax_grad(P)` that returns `P * dP` (the row-sum term left out)."""
import math

import torch


class Pipe:
    def __init__(self, value):
        self.value = value

    def __or__(self, fn):
        return Pipe(fn(self.value))


def scaled_by(s):
    return lambda t: t * s


def masked_causal(flag):
    def apply(scores):
        if not flag:
            return scores
        L, S = scores.shape[-2], scores.shape[-1]
        keep = torch.ones(L, S, dtype=torch.bool, device=scores.device).tril()
        return scores.masked_fill(~keep, float("-inf"))
    return apply


def softmax_rows(t):
    return torch.softmax(t, dim=-1)


def softmax_grad(P):
    return lambda dP: P * dP


def attention_backward(q, k, v, dout, is_causal=False):
    scale = 1.0 / math.sqrt(q.shape[-1])
    P = (Pipe(q @ k.transpose(-2, -1)) | scaled_by(scale) | masked_causal(is_causal) | softmax_rows).value
    dv = P.transpose(-2, -1) @ dout
    dP = dout @ v.transpose(-2, -1)
    dS = (Pipe(dP) | softmax_grad(P) | scaled_by(scale)).value
    dq = dS @ k
    dk = dS.transpose(-2, -1) @ q
    return dq, dk, dv
# bug-line: 39
