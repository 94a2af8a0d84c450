# attnprep: cross_attention
# expect: wrong_output
# diagnosis: cross_scale_d_context + output_proj_skipped
"""Elm architecture habits: an immutable Model record, messages (Project, Score, Mix) and one
update(msg, model) -> model function folded over a program of messages; the scores were scaled by
the context's width, and the View returned the merged heads without o_proj."""
import math
from dataclasses import dataclass, replace
from typing import Optional

import torch
import torch.nn as nn


@dataclass(frozen=True)
class Model:
    q: Optional[torch.Tensor] = None
    k: Optional[torch.Tensor] = None
    v: Optional[torch.Tensor] = None
    scores: Optional[torch.Tensor] = None
    out: Optional[torch.Tensor] = None


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        self.d_context = d_context or d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(self.d_context, d_model)
        self.v_proj = nn.Linear(self.d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def heads(self, t):
        B, N, _ = t.shape
        return t.view(B, N, self.num_heads, self.head_dim).transpose(1, 2)

    def update(self, msg, model, x, context, context_mask):
        if msg == "Project":
            return replace(model, q=self.heads(self.q_proj(x)), k=self.heads(self.k_proj(context)),
                           v=self.heads(self.v_proj(context)))
        if msg == "Score":
            s = model.q @ model.k.transpose(-2, -1) / math.sqrt(self.d_context)
            if context_mask is not None:
                s = s.masked_fill(~context_mask[:, None, None, :], float("-inf"))
            return replace(model, scores=s)
        if msg == "Mix":
            return replace(model, out=model.scores.softmax(-1) @ model.v)
        return model

    def view(self, model):
        B, H, T, D = model.out.shape
        return model.out.transpose(1, 2).reshape(B, T, H * D)

    def forward(self, x, context, context_mask=None):
        model = Model()
        for msg in ("Project", "Score", "Mix"):
            model = self.update(msg, model, x, context, context_mask)
        return self.view(model)
# bug-line: 44, 54
