# attnprep: attention_backward
# expect: passed
"""The backward of a custom torch.autograd.Function, called by hand with a plain ctx (the class is
never applied: no autograd runs)."""
import math
from types import SimpleNamespace

import torch


class Attention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, is_causal):
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        if is_causal:
            T_q, T_k = q.size(-2), k.size(-2)
            bias = torch.tril(torch.ones(T_q, T_k, device=q.device)).view(1, 1, T_q, T_k)
            att = att.masked_fill(bias == 0, float("-inf"))
        att = torch.nn.functional.softmax(att, dim=-1)
        ctx.save_for_backward(q, k, v, att)
        return att @ v

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, att = ctx.saved_tensors
        scale = 1.0 / math.sqrt(k.size(-1))
        grad_v = att.transpose(-2, -1) @ grad_out
        grad_att = grad_out @ v.transpose(-2, -1)
        grad_s = att * (grad_att - (grad_att * att).sum(-1, keepdim=True)) * scale
        return grad_s @ k, grad_s.transpose(-2, -1) @ q, grad_v, None


class _Ctx(SimpleNamespace):
    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors


def attention_backward(q, k, v, dout, is_causal=False):
    ctx = _Ctx()
    Attention.forward(ctx, q, k, v, is_causal)
    dq, dk, dv, _ = Attention.backward(ctx, dout)
    return dq, dk, dv
