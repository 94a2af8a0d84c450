# attnprep: mha
# expect: passed
"""Correct: the softmax as a torch.library.custom_op (PyTorch 2.4+) with its own fake and autograd
(register_autograd with the softmax backward y * (g - (g * y).sum)), as people write a kernel's
Python fallback; the masks as -inf before it."""

import math

import torch
import torch.nn as nn


@torch.library.custom_op("attnprep_user::row_softmax", mutates_args=())
def row_softmax(x: torch.Tensor) -> torch.Tensor:
    m = x.amax(dim=-1, keepdim=True)
    e = torch.exp(x - m)
    return e / e.sum(dim=-1, keepdim=True)


@row_softmax.register_fake
def _(x):
    return torch.empty_like(x)


def _setup(ctx, inputs, output):
    ctx.save_for_backward(output)


def _backward(ctx, grad):
    (y,) = ctx.saved_tensors
    return y * (grad - (grad * y).sum(dim=-1, keepdim=True))


row_softmax.register_autograd(_backward, setup_context=_setup)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H = self.num_heads
        q = self.q_proj(x).view(B, T, H, -1).transpose(1, 2)
        k = self.k_proj(x).view(B, T, H, -1).transpose(1, 2)
        v = self.v_proj(x).view(B, T, H, -1).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(C // H)
        if is_causal:
            s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool, device=x.device).tril(), float("-inf"))
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None], float("-inf"))
        p = row_softmax(s)
        return self.o_proj((p @ v).transpose(1, 2).reshape(B, T, C))
