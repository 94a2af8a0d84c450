# attnprep: cross_attention
# expect: mask_leak
# diagnosis: padding_mask_ignored
"""Attention written as lists of stages run by one small loop (`run(stages, t)`), the way a
torchdata / sklearn-Pipeline habit reads: the heads split and merge as stages, the score stages
(scale, softmax, dropout) listed inline from small functools.partial pieces. A `pad_keys` stage is
written, but the list of score stages leaves it out: padded context tokens keep their weight."""

import functools
import math

import torch.nn as nn


def run(stages, t):
    for stage in stages:
        t = stage(t)
    return t


def split_heads(t, h):
    B, N, C = t.shape
    return t.view(B, N, h, C // h).transpose(1, 2)  # (B, h, N, C/h)


def merge_heads(t):
    B, h, N, d = t.shape
    return t.transpose(1, 2).reshape(B, N, h * d)


def scale_by(t, d):
    return t / math.sqrt(d)


def pad_keys(t, keep):
    return t if keep is None else t.masked_fill(~keep[:, None, None, :], float("-inf"))


def softmax_last(t):
    return t.softmax(dim=-1)


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_context or d_model
        self.h = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, context, context_mask=None):
        heads = functools.partial(split_heads, h=self.h)
        q = run([self.q_proj, heads], x)
        k = run([self.k_proj, heads], context)
        v = run([self.v_proj, heads], context)
        scale = functools.partial(scale_by, d=q.shape[-1])
        probs = run([scale, softmax_last, self.dropout], q @ k.transpose(-2, -1))
        return run([merge_heads, self.o_proj], probs @ v)
# bug-line: 60
