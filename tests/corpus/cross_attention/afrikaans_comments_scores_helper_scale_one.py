# attnprep: cross_attention
# expect: wrong_output
# diagnosis: missing_scale
"""Afrikaanse kommentaar (Afrikaans comments and names: navrae, sleutels, waardes, konteks,
gewigte); the scores in a helper whose scale defaults to 1/sqrt(head size), and the forward's one
call hands it scale=1.0 of its own."""
import math

import torch
import torch.nn as nn


def tellings(navrae, sleutels, skaal=None):
    # die telling van elke navraag teen elke sleutel
    skaal = 1.0 / math.sqrt(navrae.shape[-1]) if skaal is None else skaal
    return torch.matmul(navrae, sleutels.transpose(-2, -1)) * skaal


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        d_context = d_context or d_model
        self.koppe = num_heads
        self.kop_grootte = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_context, d_model)
        self.v_proj = nn.Linear(d_context, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.uitval = nn.Dropout(dropout)

    def forward(self, x, context, context_mask=None):
        B, T, C = x.shape
        S = context.shape[1]
        navrae = self.q_proj(x).view(B, T, self.koppe, self.kop_grootte).transpose(1, 2)
        sleutels = self.k_proj(context).view(B, S, self.koppe, self.kop_grootte).transpose(1, 2)
        waardes = self.v_proj(context).view(B, S, self.koppe, self.kop_grootte).transpose(1, 2)
        t = tellings(navrae, sleutels, skaal=1.0)  # tellings
        if context_mask is not None:
            t = t.masked_fill(~context_mask[:, None, None, :], float("-inf"))
        gewigte = self.uitval(t.softmax(dim=-1))
        uit = (gewigte @ waardes).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(uit)
# bug-line: 37
