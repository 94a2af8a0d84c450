# attnprep: attention_backward
# expect: error
# diagnosis: dk_not_transposed
"""A hand-made tape: an abc.ABC `Node` with `backward(grad)` per op (MatMulNode, ScaleNode,
SoftmaxNode), the forward recording nodes and the backward walking them in reverse, as micrograd
does for scalars. The key gradient is taken as dS @ q instead of dSᵀ @ q: right shape only when
L == S (and then the wrong numbers), a shape error otherwise."""

import abc
import math

import torch


class Node(abc.ABC):
    @abc.abstractmethod
    def backward(self, grad): ...


class SoftmaxNode(Node):
    def __init__(self, p):
        self.p = p

    def backward(self, grad):
        return self.p * (grad - (grad * self.p).sum(-1, keepdim=True))


def attention_backward(q, k, v, dout, is_causal=False):
    L, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = 1 / math.sqrt(D)
    s = q @ k.transpose(-2, -1) * scale
    if is_causal:
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    p = s.softmax(-1)
    tape = [SoftmaxNode(p)]
    dv = p.transpose(-2, -1) @ dout
    dp = dout @ v.transpose(-2, -1)
    ds = tape[-1].backward(dp) * scale
    dq = ds @ k
    dk = ds @ q
    return dq, dk, dv
# bug-line: 40
